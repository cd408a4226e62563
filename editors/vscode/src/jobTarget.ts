// Which folder "Diagnose folder" sends to the server. The server finds a file's job itself (the
// run folder around it), so the client only picks what the user pointed at. Pure: unit-tested.

export type JobTarget = { kind: "path"; path: string } | { kind: "ask" };

export interface JobContext {
  /** A folder or file picked in the explorer (the command's context-menu argument). */
  explorerPath?: string;
  /** The file shown in the active editor, when it is a file on disk. */
  activeFile?: string;
  /** The workspace's folders on disk. */
  workspaceFolders: readonly string[];
}

export function jobTarget(context: JobContext): JobTarget {
  if (context.explorerPath) {
    return { kind: "path", path: context.explorerPath };
  }
  if (context.activeFile) {
    return { kind: "path", path: context.activeFile };
  }
  if (context.workspaceFolders.length === 1) {
    return { kind: "path", path: context.workspaceFolders[0] };
  }
  return { kind: "ask" };
}
