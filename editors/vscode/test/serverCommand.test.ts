import assert from "node:assert/strict";
import { test } from "node:test";

import { looksLikePython, serverCommand } from "../src/serverCommand";

test("the setting wins: an executable runs `lsp`, an interpreter runs the module", () => {
  assert.deepEqual(serverCommand("/opt/venv/bin/firstfault", "/usr/bin/python3"), { command: "/opt/venv/bin/firstfault", args: ["lsp"] });
  assert.deepEqual(serverCommand(" /opt/venv/bin/python3.11 ", undefined), { command: "/opt/venv/bin/python3.11", args: ["-m", "firstfault.lsp"] });
  assert.deepEqual(serverCommand("C:\\envs\\ml\\python.exe"), { command: "C:\\envs\\ml\\python.exe", args: ["-m", "firstfault.lsp"] });
});

test("without the setting: the Python extension's interpreter, else firstfault on PATH", () => {
  assert.deepEqual(serverCommand("", "/home/me/.venv/bin/python"), { command: "/home/me/.venv/bin/python", args: ["-m", "firstfault.lsp"] });
  assert.deepEqual(serverCommand("   ", undefined), { command: "firstfault", args: ["lsp"] });
  assert.deepEqual(serverCommand("", "  "), { command: "firstfault", args: ["lsp"] });
});

test("which names are interpreters", () => {
  for (const name of ["python", "python3", "python3.12", "/usr/bin/python3", "pythonw.exe", "Python.EXE"]) {
    assert.equal(looksLikePython(name), true, name);
  }
  for (const name of ["firstfault", "/venv/bin/firstfault", "python-config", "ipython", "/python3/bin/firstfault"]) {
    assert.equal(looksLikePython(name), false, name);
  }
});
