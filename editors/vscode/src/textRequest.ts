// A selection, or a terminal's output, as the arguments of the server's `firstfault.diagnoseText`.
// Pure: unit-tested. The server masks secrets and diagnoses; nothing here interprets the log.

/** The most of a terminal's output sent: its most recent part (the failure is at the end). */
export const MAX_TEXT_CHARACTERS = 16 * 1024 * 1024;

export interface TextRequest {
  text: string;
  options: { name: string; showReport: boolean };
}

export type TextRequestResult = { request: TextRequest } | { error: string };

// Terminal control sequences a copied terminal buffer may carry: CSI (colours, cursor) and OSC
// (titles, shell-integration marks).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_SEQUENCES = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

function cleaned(captured: string): string {
  let text = captured.replace(CONTROL_SEQUENCES, "").replace(/\r\n/g, "\n");
  if (text.length > MAX_TEXT_CHARACTERS) {
    text = text.slice(text.length - MAX_TEXT_CHARACTERS);
    const lineStart = text.indexOf("\n");
    text = lineStart >= 0 ? text.slice(lineStart + 1) : text;
  }
  return text.replace(/\s+$/, "") + "\n";
}

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "terminal";
}

/** What a terminal's selection (or, without one, its recent output) becomes. */
export function terminalRequest(captured: string, terminalName: string): TextRequestResult {
  const text = cleaned(captured);
  if (!text.trim()) {
    return { error: "The terminal shows nothing to diagnose: select the failed run's output, or make that terminal active." };
  }
  return { request: { text, options: { name: `terminal-${safeName(terminalName)}.log`, showReport: true } } };
}

/** What an editor selection becomes; `documentName` names it in the report. */
export function selectionRequest(selected: string, documentName: string): TextRequestResult {
  const text = cleaned(selected);
  if (!text.trim()) {
    return { error: "Nothing is selected: select the log lines (a traceback, the end of a run) first." };
  }
  const base = documentName.split(/[\\/]/).pop() || "selection";
  return { request: { text, options: { name: `${base} (selection)`, showReport: true } } };
}
