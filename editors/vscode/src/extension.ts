// The VS Code client of `firstfault lsp`: starts the server from the chosen Python environment,
// registers the three commands, shows the server's reports in a Markdown preview and copies the
// verification commands it returns. No diagnosis logic here: everything shown comes from the server.
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  ResponseError,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";

import { jobTarget } from "./jobTarget";
import { serverCommand } from "./serverCommand";
import { selectionRequest, terminalRequest, type TextRequestResult } from "./textRequest";

const INSTALL_HINT = "Install it with `pip install 'firstfault[lsp]'` in the environment you use, or set `firstfault.path`.";
let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const settings = vscode.workspace.getConfiguration("firstfault");
  const started = serverCommand(settings.get<string>("path", ""), await pythonInterpreter());
  const serverOptions: ServerOptions = { command: started.command, args: started.args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "log" },
      { scheme: "file", pattern: "**/*.{log,out,err,txt}" },
    ],
    initializationOptions: {
      webUrl: settings.get<string>("webUrl", "http://127.0.0.1:8000"),
      clipboard: true,
      jobMaxFiles: settings.get<number>("jobMaxFiles", 512),
      jobMaxBytes: settings.get<number>("jobMaxMegabytes", 2048) * 1024 * 1024,
      jobMaxDepth: settings.get<number>("jobMaxDepth", 4),
      saveHistory: settings.get<boolean>("saveHistory", false),
    },
    middleware: {
      window: {
        // the server's reports and entries are Markdown files: show them rendered, read-only
        showDocument: async (params, next) => {
          if (params.uri.endsWith(".md")) {
            await vscode.commands.executeCommand("markdown.showPreview", vscode.Uri.parse(params.uri));
            return { success: true };
          }
          const shown = await next(params, new vscode.CancellationTokenSource().token);
          return shown instanceof ResponseError ? { success: false } : shown;
        },
      },
      executeCommand: async (command, args, next) => {
        const result: unknown = await next(command, args);
        const copied = command === "firstfault.copyVerification" ? textField(result, "command") : undefined;
        if (copied) {
          await vscode.env.clipboard.writeText(copied);
          void vscode.window.showInformationMessage(`Copied: ${copied}`);
        }
        return result;
      },
    },
  };
  client = new LanguageClient("firstfault", "firstfault", serverOptions, clientOptions);
  context.subscriptions.push(
    vscode.commands.registerCommand("firstfault.ui.diagnoseFolder", diagnoseFolder),
    vscode.commands.registerCommand("firstfault.ui.diagnoseSelection", diagnoseSelection),
    vscode.commands.registerCommand("firstfault.ui.diagnoseTerminal", diagnoseTerminal),
  );
  try {
    await client.start();
  } catch (error) {
    void vscode.window.showErrorMessage(`firstfault: could not start \`${started.command} ${started.args.join(" ")}\` (${String(error)}). ${INSTALL_HINT}`);
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

async function diagnoseFolder(picked?: vscode.Uri): Promise<void> {
  const active = vscode.window.activeTextEditor?.document.uri;
  const target = jobTarget({
    explorerPath: picked?.scheme === "file" ? picked.fsPath : undefined,
    activeFile: active?.scheme === "file" ? active.fsPath : undefined,
    workspaceFolders: (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath),
  });
  let path = target.kind === "path" ? target.path : undefined;
  if (!path) {
    const chosen = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: "Diagnose" });
    path = chosen?.[0]?.fsPath;
  }
  if (path) {
    await ask("firstfault.diagnoseFolder", [path, { showReport: true }]);
  }
}

async function diagnoseSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showWarningMessage("firstfault: open a log and select its lines first.");
    return;
  }
  const selected = editor.selections.map((selection) => editor.document.getText(selection)).join("\n");
  await askText(selectionRequest(selected, editor.document.fileName));
}

async function diagnoseTerminal(): Promise<void> {
  const terminal = vscode.window.activeTerminal;
  if (!terminal) {
    void vscode.window.showWarningMessage("firstfault: no terminal is active.");
    return;
  }
  await askText(terminalRequest(await terminalText(), terminal.name));
}

/** The active terminal's selection or, without one, its whole buffer; the clipboard is restored. */
async function terminalText(): Promise<string> {
  const saved = await vscode.env.clipboard.readText();
  try {
    await vscode.env.clipboard.writeText("");
    await vscode.commands.executeCommand("workbench.action.terminal.copySelection");
    let text = await vscode.env.clipboard.readText();
    if (!text) {
      await vscode.commands.executeCommand("workbench.action.terminal.selectAll");
      await vscode.commands.executeCommand("workbench.action.terminal.copySelection");
      await vscode.commands.executeCommand("workbench.action.terminal.clearSelection");
      text = await vscode.env.clipboard.readText();
    }
    return text;
  } finally {
    await vscode.env.clipboard.writeText(saved);
  }
}

async function askText(result: TextRequestResult): Promise<void> {
  if ("error" in result) {
    void vscode.window.showWarningMessage(`firstfault: ${result.error}`);
    return;
  }
  await ask("firstfault.diagnoseText", [result.request.text, result.request.options]);
}

/** Run one of the server's commands; it shows its report itself, through showDocument. */
async function ask(command: string, args: unknown[]): Promise<void> {
  if (!client) {
    return;
  }
  try {
    await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  } catch (error) {
    void vscode.window.showErrorMessage(`firstfault: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The interpreter chosen in the Python extension, when it is installed. */
async function pythonInterpreter(): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension("ms-python.python");
  if (!extension) {
    return undefined;
  }
  try {
    const api: unknown = extension.isActive ? extension.exports : await extension.activate();
    const environments = field(api, "environments");
    const active = field(environments, "getActiveEnvironmentPath");
    if (typeof active !== "function") {
      return undefined;
    }
    const environment: unknown = (active as (resource?: vscode.Uri) => unknown).call(environments, vscode.window.activeTextEditor?.document.uri);
    return textField(environment, "path");
  } catch {
    return undefined; // the Python extension failed to activate: fall back to PATH
  }
}

function field(value: unknown, name: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

function textField(value: unknown, name: string): string | undefined {
  const found = field(value, name);
  return typeof found === "string" && found ? found : undefined;
}
