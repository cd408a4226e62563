import assert from "node:assert/strict";
import { test } from "node:test";

import { MAX_TEXT_CHARACTERS, selectionRequest, terminalRequest } from "../src/textRequest";

test("a terminal selection becomes plain log text named after the terminal", () => {
  const captured = "\u001b[31m[rank1]: OSError: [Errno 28] No space left on device\u001b[0m\r\n\u001b]633;D;1\u0007$ \r\n\r\n";
  const result = terminalRequest(captured, "torchrun (2)");
  assert.ok("request" in result);
  assert.equal(result.request.text, "[rank1]: OSError: [Errno 28] No space left on device\n$\n");
  assert.deepEqual(result.request.options, { name: "terminal-torchrun-2.log", showReport: true });
});

test("progress-bar carriage returns are kept: the server reads them as the log has them", () => {
  const result = terminalRequest("Epoch 1:  10%|█\rEpoch 1:  20%|██\n", "bash");
  assert.ok("request" in result);
  assert.equal(result.request.text, "Epoch 1:  10%|█\rEpoch 1:  20%|██\n");
});

test("an empty terminal or selection is a message, not a request", () => {
  assert.ok("error" in terminalRequest("\u001b[0m  \r\n ", "bash"));
  assert.ok("error" in selectionRequest("", "/runs/rank0.log"));
});

test("a huge buffer keeps its most recent whole lines", () => {
  const line = "x".repeat(99) + "\n";
  const captured = "first line\n" + line.repeat(Math.ceil(MAX_TEXT_CHARACTERS / line.length) + 10) + "[rank3]: RuntimeError: boom\n";
  const result = terminalRequest(captured, "bash");
  assert.ok("request" in result);
  assert.ok(result.request.text.length <= MAX_TEXT_CHARACTERS + 1);
  assert.ok(result.request.text.startsWith("x".repeat(99) + "\n"));
  assert.ok(result.request.text.endsWith("[rank3]: RuntimeError: boom\n"));
});

test("a selection is named after its file, so the file's rank still counts", () => {
  const result = selectionRequest("[E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout\n", "/runs/job/rank3.log");
  assert.ok("request" in result);
  assert.equal(result.request.options.name, "rank3.log (selection)");
});
