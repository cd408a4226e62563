// How to start `firstfault lsp`: from the setting, else the Python extension's interpreter, else PATH.
// Pure (no vscode): unit-tested with node's test runner.

export interface ServerCommand {
  command: string;
  args: string[];
}

const PYTHON = /^python(?:w)?(?:\d+(?:\.\d+)*)?(?:\.exe)?$/i;

/** Whether `path` names a Python interpreter (then the server runs as `python -m firstfault.lsp`). */
export function looksLikePython(path: string): boolean {
  const name = path.split(/[\\/]/).pop() ?? "";
  return PYTHON.test(name);
}

/**
 * The command that starts the server. `configured` is the `firstfault.path` setting: a `firstfault`
 * executable or a Python interpreter; `interpreter` the one chosen in the Python extension, if any.
 */
export function serverCommand(configured: string, interpreter?: string): ServerCommand {
  const path = configured.trim();
  if (path) {
    return looksLikePython(path) ? { command: path, args: ["-m", "firstfault.lsp"] } : { command: path, args: ["lsp"] };
  }
  if (interpreter && interpreter.trim()) {
    return { command: interpreter.trim(), args: ["-m", "firstfault.lsp"] };
  }
  return { command: "firstfault", args: ["lsp"] };
}
