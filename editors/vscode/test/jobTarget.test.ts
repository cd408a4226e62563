import assert from "node:assert/strict";
import { test } from "node:test";

import { jobTarget } from "../src/jobTarget";

test("the folder picked in the explorer is the job", () => {
  assert.deepEqual(jobTarget({ explorerPath: "/runs/job-42", activeFile: "/runs/other/rank0.log", workspaceFolders: ["/runs"] }),
    { kind: "path", path: "/runs/job-42" });
});

test("else the open log: the server diagnoses the run folder around it", () => {
  assert.deepEqual(jobTarget({ activeFile: "/runs/job-42/attempt_0/3/stderr.log", workspaceFolders: ["/a", "/b"] }),
    { kind: "path", path: "/runs/job-42/attempt_0/3/stderr.log" });
});

test("else the one workspace folder; with several or none the user is asked", () => {
  assert.deepEqual(jobTarget({ workspaceFolders: ["/runs/job-42"] }), { kind: "path", path: "/runs/job-42" });
  assert.deepEqual(jobTarget({ workspaceFolders: ["/a", "/b"] }), { kind: "ask" });
  assert.deepEqual(jobTarget({ workspaceFolders: [] }), { kind: "ask" });
});
