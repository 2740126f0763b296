/**
 * seance inside pi: `/seance [query]` (or Alt+S in the editor) opens seance on the terminal,
 * then resumes, resumes at an entry, or forks the chosen session the way pi's own /resume,
 * /tree and `pi --fork` do.
 *
 * pi 0.73.1 cannot hand /resume to an external program, but an extension command can stop
 * pi's TUI, run `seance pick --json` with the terminal (as examples/extensions/interactive-shell.ts
 * runs vim), start the TUI again and act on the answer:
 *
 *   resume            ctx.switchSession(path)
 *   resume + entryId  ctx.switchSession(path), then navigateTree(entryId, { summarize: false }):
 *                     pi derives the leaf (a user message: its parent, or a reset for the first
 *                     prompt) and puts the message back in the editor, exactly as /tree does
 *   fork              SessionManager.forkFrom(path, cwd, sessionDir) (what `pi --fork` calls),
 *                     then ctx.switchSession(the new file)
 *
 * SEANCE_COMMAND overrides the program (words separated by spaces, e.g. "python3 -m seance")
 * for a seance that is not on PATH.
 */

import { spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readSync } from "node:fs";
import type { ExtensionAPI, ExtensionCommandContext, ExtensionUIContext } from "@mariozechner/pi-coding-agent";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const SHORTCUT = "alt+s"; // unbound in pi 0.73.1 (docs/keybindings.md)
const CANCELLED = 130; // seance's exit code for Esc / Ctrl+C
// spawnSync's output limit: its default (1 MiB) kills the child and truncates what it printed
const UNBOUNDED = Number.POSITIVE_INFINITY;

/** What `seance pick --json` prints (README: "Inside pi" and the pick contract table). */
interface Pick {
	action: "resume" | "fork";
	path: string;
	entryId: string | null;
	leafId: string | null;
}

type Outcome = { pick: Pick } | { problem: string } | { cancelled: true } | { noTerminal: true };

function seanceCommand(): string[] {
	const words = (process.env.SEANCE_COMMAND ?? "").split(/\s+/).filter(Boolean);
	return words.length > 0 ? words : ["seance"];
}

/**
 * `text` with every control character and bidi mark a space (seance's `CONTROL_CHARS`): what
 * seance printed, a path, an id or pi's own error about them never drives or reorders pi's terminal.
 */
function visible(text: string): string {
	return text.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, " ");
}

/** A notice in pi's UI: its text made `visible` (it names paths and ids, and quotes errors about them). */
function notify(ui: ExtensionUIContext, text: string, type: "info" | "warning" | "error"): void {
	ui.notify(visible(text), type);
}

/**
 * What seance said on stderr, as one line for a notice: its own message ("seance: no sessions
 * found under …"), else the last line (a crash's exception); "" when it said nothing.
 */
function saidOnStderr(stderr: string | null): string {
	const lines = (stderr ?? "")
		.split("\n")
		.map((line) => visible(line).trim())
		.filter(Boolean);
	const own = lines.find((line) => line.startsWith("seance: "));
	return (own ?? lines[lines.length - 1] ?? "").replace(/^seance: /, "").slice(0, 300);
}

/**
 * Run seance with the terminal: seance draws on and reads keys from the terminal itself
 * (`/dev/tty`), stdout is the answer.  stderr is kept, not shown: pi's screen comes back over
 * anything written there, so seance's own message goes into the notice instead.
 */
function runSeance(args: string[], cwd: string): Outcome {
	const [program, ...prefix] = seanceCommand();
	// --no-cwd-prompt: pi's switchSession asks about a session whose cwd is gone; seance asking
	// first put the same question twice
	const command = [...prefix, "pick", "--json", "--no-cwd-prompt", "--cwd", cwd, ...args];
	// pi's TUI is stopped: the terminal sends Ctrl+C as SIGINT to the whole foreground group until
	// seance takes the terminal, and pi has no handler of its own (it would die): ignored meanwhile,
	// as pi's own Ctrl+Z handling does.  seance reads its Ctrl+C as a key (exit 130).
	const ignore = () => {};
	process.on("SIGINT", ignore);
	let run: ReturnType<typeof spawnSync>;
	try {
		run = spawnSync(program, command, {
			stdio: ["inherit", "pipe", "pipe"],
			encoding: "utf8",
			env: process.env,
			maxBuffer: UNBOUNDED, // (past the default 1 MiB, spawnSync kills seance mid-pick)
		});
	} finally {
		// (later, not now: a SIGINT caught during the run is handed to the listeners on a later
		// turn of pi's loop, and with none left Node dies of it; pi's TUI, raw again by then,
		// reads Ctrl+C as a key)
		setTimeout(() => process.removeListener("SIGINT", ignore), 1000);
	}
	if (run.error) {
		const missing = (run.error as NodeJS.ErrnoException).code === "ENOENT";
		return {
			problem: missing
				? `seance is not installed (command not found: ${program}). Install it, or set SEANCE_COMMAND.`
				: `could not run ${program}: ${run.error.message}`,
		};
	}
	if (run.status === CANCELLED) return { cancelled: true };
	const stdout = String(run.stdout ?? "");
	if (run.status !== 0) {
		const said = saidOnStderr(String(run.stderr ?? ""));
		return { problem: said || `seance exited with status ${run.status ?? run.signal}` };
	}
	try {
		const pick = JSON.parse(stdout) as Pick;
		if (typeof pick.path !== "string" || (pick.action !== "resume" && pick.action !== "fork")) throw new Error();
		return { pick };
	} catch {
		return { problem: `seance printed no result pi understands: ${visible(stdout.slice(0, 200))}` };
	}
}

/** Stop pi's TUI, run seance on the terminal, start the TUI again. */
async function pickOnTerminal(ctx: ExtensionCommandContext, query: string): Promise<Outcome> {
	const outcome = await ctx.ui.custom<Outcome>((tui, _theme, _keybindings, done) => {
		tui.stop();
		let result: Outcome = { problem: "seance did not run" };
		try {
			process.stdout.write("\x1b[2J\x1b[H");
			// `--query=…`, one word: a query starting with "-" (`/seance -wip`) is no option to seance;
			// `--open-session`: the file pi has open is never moved to the Trash (pi's /resume refuses
			// it too: pi would go on appending to a file that is gone, headerless)
			const open = ctx.sessionManager.getSessionFile();
			const args = [...(query ? [`--query=${query}`] : []), ...(open ? [`--open-session=${open}`] : [])];
			result = runSeance(args, ctx.cwd);
		} catch (error) {
			// (spawnSync throws for arguments it refuses, e.g. a NUL byte): pi's screen must come back
			result = { problem: `could not run seance: ${error instanceof Error ? error.message : String(error)}` };
		} finally {
			tui.start();
			tui.requestRender(true);
		}
		done(result);
		return { render: () => [], invalidate: () => {} };
	});
	// RPC mode has UI dialogs but no terminal: custom() answers without running the factory.
	return outcome ?? { noTerminal: true };
}

/** The session header (the file's first line), or null when it cannot be read. */
function readHeader(path: string): { type?: unknown; version?: unknown } | null {
	try {
		const fd = openSync(path, "r");
		try {
			const buffer = Buffer.alloc(65536);
			const read = readSync(fd, buffer, 0, buffer.length, 0);
			return JSON.parse(buffer.subarray(0, read).toString("utf8").split("\n", 1)[0]);
		} finally {
			closeSync(fd);
		}
	} catch {
		return null;
	}
}

/**
 * A v1 session has no entry ids: pi gives its entries random ones when it opens the file, and
 * seance derived its own, so the chosen entry is named by its place in the file.  Its index
 * among the entries (seance's `tree --json`, pre-order: for v1's single chain, file order, as
 * pi's `getEntries()`), or null for a session that has ids (or when seance cannot say).
 */
function v1Position(path: string, entryId: string): number | null {
	const header = readHeader(path);
	if (header?.type !== "session" || (typeof header.version === "number" ? header.version : 1) >= 2) return null;
	const [program, ...prefix] = seanceCommand();
	const run = spawnSync(program, [...prefix, "tree", "--json", path], {
		stdio: ["ignore", "pipe", "pipe"],
		encoding: "utf8",
		env: process.env,
		maxBuffer: UNBOUNDED, // (~110 bytes a node: the default 1 MiB ended at ~9,500 entries)
	});
	try {
		const nodes = (JSON.parse(run.stdout) as { nodes: { id: string }[] }).nodes;
		const index = nodes.findIndex((node) => node.id === entryId);
		return index >= 0 ? index : null;
	} catch {
		return null;
	}
}

async function open(pick: Pick, ctx: ExtensionCommandContext, draft: string): Promise<void> {
	let path = pick.path;
	if (!existsSync(path)) {
		// gone since it was picked, or a file name that is not UTF-8 (JSON carries the name Node
		// cannot spell): pi's switchSession would start an empty session there, saying "Resumed"
		notify(ctx.ui, `seance: ${path}: no such session file (moved, deleted, or a name pi cannot open)`, "error");
		return;
	}
	if (pick.action === "fork") {
		try {
			path = SessionManager.forkFrom(path, ctx.cwd, ctx.sessionManager.getSessionDir()).getSessionFile() ?? path;
		} catch (error) {
			// e.g. the file is not a session (pi's own message); nothing has changed yet
			notify(ctx.ui, `seance: ${error instanceof Error ? error.message : String(error)}`, "error");
			return;
		}
	}
	const entryId = pick.entryId;
	const position = entryId ? v1Position(path, entryId) : null; // (read before pi migrates the file)
	await ctx.switchSession(path, {
		withSession: async (next) => {
			if (entryId) {
				// pi's resume treats a throw from here as fatal (it exits): say it, stay at the leaf
				try {
					const target = position === null ? entryId : next.sessionManager.getEntries()[position]?.id;
					if (!target) throw new Error(`entry ${entryId} not found`);
					// seance resumes a prompt *at* itself only when it is the session's last entry (pi's
					// /tree: "Already at this point"), and showed that context.  pi may have appended an
					// entry on resume (a thinking level, for a file without one), after which navigateTree
					// would resume before the prompt instead: stay where pi opened the session.
					const entry = next.sessionManager.getEntry(target);
					const prompt = entry?.type === "custom_message" || (entry?.type === "message" && entry.message.role === "user");
					if (!(prompt && pick.leafId === entryId)) await next.navigateTree(target, { summarize: false });
				} catch (error) {
					const message = error instanceof Error ? error.message : String(error);
					notify(next.ui, `seance: the session is open at its last entry: ${message}`, "error");
				}
			}
			if (draft && !next.ui.getEditorText().trim()) next.ui.setEditorText(draft);
		},
	});
}

export default function seance(pi: ExtensionAPI) {
	let draft = ""; // the editor's text when Alt+S replaced it with "/seance"

	pi.registerCommand("seance", {
		description: "Find a session with seance and resume it, at any entry, or fork it",
		handler: async (args, ctx) => {
			const saved = draft;
			draft = "";
			if (!ctx.hasUI) {
				console.error("seance: /seance needs pi's interactive terminal UI");
				return;
			}
			if (!ctx.isIdle()) {
				notify(ctx.ui, "seance: waiting for the agent to finish…", "info");
				await ctx.waitForIdle();
			}
			const outcome = await pickOnTerminal(ctx, args.trim());
			if ("pick" in outcome) {
				await open(outcome.pick, ctx, saved);
				return;
			}
			if (saved && !ctx.ui.getEditorText().trim()) ctx.ui.setEditorText(saved);
			if ("problem" in outcome) notify(ctx.ui, `seance: ${outcome.problem}`, "error");
			if ("noTerminal" in outcome) notify(ctx.ui, "seance: /seance needs pi's interactive terminal UI", "error");
		},
	});

	// A shortcut handler gets no switchSession (pi 0.73.1), so the key runs the command the way
	// a user would: "/seance" in the editor, then Enter.  It fires only while the editor has focus.
	pi.registerShortcut(SHORTCUT, {
		description: "Open seance (/seance)",
		handler: (ctx) => {
			draft = ctx.ui.getEditorText();
			ctx.ui.setEditorText("/seance");
			setImmediate(() => process.stdin.emit("data", "\r"));
		},
	});
}
