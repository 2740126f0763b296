#!/usr/bin/env node
// Differential-testing oracle for seance.
//
// Uses pi's REAL SessionManager (@mariozechner/pi-coding-agent, pinned in
// package.json) to write randomized session files under OUT_DIR/sessions/<bucket>/,
// then re-opens every written file with pi and records what pi says it means
// (tree, leaf, contexts, listing) in OUT_DIR/expected.json.
//
// usage: node generate.mjs OUT_DIR [--count N] [--seed S] [--live]
//
// By default the run is fully deterministic for a given seed: the clock pi sees
// (Date / Date.now) is a fake clock driven by the seeded PRNG (it sometimes stands
// still, giving equal timestamps, and occasionally steps backwards, simulating clock
// skew), and the randomness pi uses for entry ids (crypto.randomUUID) and session ids
// (uuid v7 -> globalThis.crypto.getRandomValues) is fed from a seeded PRNG too.
// --live disables both fakes (real clock, real randomness); the op sequence is still
// seeded, the ids/timestamps are not.

import fs from "node:fs";
import path from "node:path";
import nodeCrypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";

const PI_VERSION = "0.73.1";

// ---------------------------------------------------------------------------
// args
// ---------------------------------------------------------------------------
function usage(msg) {
	if (msg) process.stderr.write(`error: ${msg}\n`);
	process.stderr.write("usage: node generate.mjs OUT_DIR [--count N] [--seed S] [--live]\n");
	process.exit(2);
}
const argv = process.argv.slice(2);
let outArg = null;
let count = 40;
let seed = "1";
let live = false;
for (let i = 0; i < argv.length; i++) {
	const a = argv[i];
	if (a === "--count") count = Number.parseInt(argv[++i], 10);
	else if (a === "--seed") seed = String(argv[++i]);
	else if (a === "--live") live = true;
	else if (a === "-h" || a === "--help") usage();
	else if (a.startsWith("--")) usage(`unknown option ${a}`);
	else if (outArg === null) outArg = a;
	else usage(`unexpected argument ${a}`);
}
if (!outArg) usage("OUT_DIR is required");
if (!Number.isInteger(count) || count < 0) usage("--count must be a non-negative integer");
if (seed === "undefined") usage("--seed needs a value");

const OUT_DIR = path.resolve(outArg);
const SESSIONS_ROOT = path.join(OUT_DIR, "sessions");
if (fs.existsSync(SESSIONS_ROOT) || fs.existsSync(path.join(OUT_DIR, "expected.json"))) {
	usage(`${OUT_DIR} already contains sessions/ or expected.json; use a fresh directory`);
}
fs.mkdirSync(SESSIONS_ROOT, { recursive: true });
// pi's agent dir -> sessions root is <agentDir>/sessions
process.env.PI_CODING_AGENT_DIR = OUT_DIR;

// ---------------------------------------------------------------------------
// seeded PRNG (xmur3 string hash -> sfc32)
// ---------------------------------------------------------------------------
function xmur3(str) {
	let h = 1779033703 ^ str.length;
	for (let i = 0; i < str.length; i++) {
		h = Math.imul(h ^ str.charCodeAt(i), 3432918353);
		h = (h << 13) | (h >>> 19);
	}
	return () => {
		h = Math.imul(h ^ (h >>> 16), 2246822507);
		h = Math.imul(h ^ (h >>> 13), 3266489909);
		h ^= h >>> 16;
		return h >>> 0;
	};
}
function sfc32(a, b, c, d) {
	return () => {
		a >>>= 0;
		b >>>= 0;
		c >>>= 0;
		d >>>= 0;
		let t = (a + b) | 0;
		a = b ^ (b >>> 9);
		b = (c + (c << 3)) | 0;
		c = (c << 21) | (c >>> 11);
		d = (d + 1) | 0;
		t = (t + d) | 0;
		c = (c + t) | 0;
		return (t >>> 0) / 4294967296;
	};
}
function makeRng(s) {
	const h = xmur3(s);
	const r = sfc32(h(), h(), h(), h());
	for (let i = 0; i < 20; i++) r();
	return r;
}
const rng = makeRng(`ops:${seed}`); // op sequence + content
const idRng = makeRng(`ids:${seed}`); // fed to pi's id generators
const clockRng = makeRng(`clock:${seed}`); // fake clock steps

const rand = () => rng();
const randInt = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1)); // inclusive
const chance = (p) => rand() < p;
const pick = (arr) => arr[Math.floor(rand() * arr.length)];
function weighted(table) {
	let total = 0;
	for (const [, w] of table) total += w;
	let x = rand() * total;
	for (const [v, w] of table) {
		x -= w;
		if (x < 0) return v;
	}
	return table[table.length - 1][0];
}

// ---------------------------------------------------------------------------
// fake clock + seeded randomness for pi (unless --live)
// ---------------------------------------------------------------------------
const RealDate = Date;
let clock = RealDate.UTC(2025, 0, 1) + Math.floor(clockRng() * 300 * 86400000);
function tick() {
	if (live) return;
	const r = clockRng();
	if (r < 0.25) return; // same millisecond (equal timestamps)
	if (r < 0.83) clock += 1 + Math.floor(clockRng() * 4000);
	else if (r < 0.93) clock += 5000 + Math.floor(clockRng() * 1800000);
	else clock -= 1 + Math.floor(clockRng() * 20000); // clock skew: time goes backwards
}
const nowMs = () => (live ? RealDate.now() : clock);

if (!live) {
	class FakeDate extends RealDate {
		constructor(...args) {
			if (args.length === 0) super(clock);
			else super(...args);
		}
		static now() {
			return clock;
		}
	}
	globalThis.Date = FakeDate;

	const randomByte = () => Math.floor(idRng() * 256);
	nodeCrypto.randomUUID = () => {
		const b = new Uint8Array(16);
		for (let i = 0; i < 16; i++) b[i] = randomByte();
		b[6] = (b[6] & 0x0f) | 0x40;
		b[8] = (b[8] & 0x3f) | 0x80;
		const h = Buffer.from(b).toString("hex");
		return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
	};
	syncBuiltinESMExports(); // make `import { randomUUID } from "crypto"` see the patch
	Object.defineProperty(globalThis.crypto, "getRandomValues", {
		value: (arr) => {
			const u8 = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
			for (let i = 0; i < u8.length; i++) u8[i] = randomByte();
			return arr;
		},
		configurable: true,
		writable: true,
	});
}

const pkgJson = JSON.parse(
	fs.readFileSync(new URL("./node_modules/@mariozechner/pi-coding-agent/package.json", import.meta.url), "utf8"),
);
if (pkgJson.version !== PI_VERSION) {
	throw new Error(`expected @mariozechner/pi-coding-agent ${PI_VERSION}, found ${pkgJson.version} (run npm ci)`);
}
const { SessionManager, buildSessionContext } = await import("@mariozechner/pi-coding-agent");

// ---------------------------------------------------------------------------
// content generators
// ---------------------------------------------------------------------------
const WORDS = [
	"hello", "world", "fix", "the", "bug", "in", "parser", "please", "refactor", "tests", "session", "tree",
	"branch", "label", "compact", "why", "does", "this", "fail?", "ok", "done.", "src/main.py", "line 42",
	"héllo", "ünïcödé", "日本語", "中文", "😀", "🎉", "👩‍💻", "🏳️‍🌈", "café", "naïve", "שלום", "ελληνικά",
	"[bold]x[/]", "[red]warn[/red]", "[/]", "[link=http://x]y[/link]", "\\[escaped]", "`code`", "**md**",
	"<tag>", "&amp;", "$HOME", "100%", "a\tb", "e\u0301", "zero\u200bwidth", "\u00a0nbsp",
];
const CWDS = [
	"/tmp/proj-a",
	"/home/u/proj-b",
	"/home/u/my project",
	"/srv/app_x/",
	"/home/ü/projé",
	"C:\\Users\\x\\proj",
];
const MODELS = [
	["anthropic", "claude-sonnet-4-5", "anthropic-messages"],
	["anthropic", "claude-opus-4-1", "anthropic-messages"],
	["openai", "gpt-5", "openai-responses"],
	["google", "gemini-2.5-pro", "google-generative-ai"],
	["openrouter", "qwen/qwen3-coder", "openai-completions"],
];
const THINKING = ["off", "minimal", "low", "medium", "high", "xhigh"];
const TOOLS = ["bash", "read", "edit", "write"];

function words(lo, hi) {
	const n = randInt(lo, hi);
	const out = [];
	for (let i = 0; i < n; i++) out.push(pick(WORDS));
	return out.join(" ");
}
function text() {
	const r = rand();
	if (r < 0.03) return "";
	if (r < 0.05) return "   ";
	if (r < 0.3) {
		const lines = [];
		const n = randInt(2, 5);
		for (let i = 0; i < n; i++) lines.push(chance(0.15) ? "" : words(1, 8));
		return lines.join("\n");
	}
	if (r < 0.35) return `  ${words(1, 5)}\n`;
	return words(1, 12);
}
function textBlock() {
	return { type: "text", text: text() };
}
const IMAGE = { type: "image", data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", mimeType: "image/png" };
function userContent() {
	const r = rand();
	if (r < 0.5) return text();
	if (r < 0.88) {
		const n = randInt(1, 3);
		return Array.from({ length: n }, textBlock);
	}
	if (r < 0.97) return [textBlock(), { ...IMAGE }, ...(chance(0.5) ? [textBlock()] : [])];
	return [{ ...IMAGE }]; // image only: no text at all
}
// message.timestamp (epoch ms): normally a bit before the entry is appended, sometimes absent
function msgTimestamp() {
	if (chance(0.05)) return undefined;
	return nowMs() - (chance(0.5) ? 0 : randInt(0, 20000));
}
function withTs(msg) {
	const ts = msgTimestamp();
	if (ts !== undefined) msg.timestamp = ts;
	return msg;
}

let toolCallCounter = 0;
let lastToolCalls = [];
let currentModel = pick(MODELS);

function userMessage() {
	return withTs({ role: "user", content: userContent() });
}
function assistantMessage() {
	const content = [];
	if (chance(0.4)) content.push({ type: "thinking", thinking: text(), thinkingSignature: chance(0.5) ? "sig" : undefined });
	const nText = weighted([[0, 2], [1, 7], [2, 2]]);
	for (let i = 0; i < nText; i++) content.push(textBlock());
	const calls = [];
	const nCalls = weighted([[0, 6], [1, 3], [2, 1]]);
	for (let i = 0; i < nCalls; i++) {
		const name = pick(TOOLS);
		const call = {
			type: "toolCall",
			id: `call_${++toolCallCounter}`,
			name,
			arguments: name === "bash" ? { command: `ls ${pick(WORDS)}` } : { path: `src/${pick(["a", "b", "c"])}.py` },
		};
		calls.push(call);
		content.push(call);
	}
	if (chance(0.15)) {
		// shuffle block order a bit (text after tool calls etc.)
		content.reverse();
	}
	lastToolCalls = calls;
	if (chance(0.1)) currentModel = pick(MODELS);
	const [provider, model, api] = currentModel;
	const input = randInt(10, 50000);
	const output = randInt(1, 4000);
	const cacheRead = chance(0.5) ? randInt(0, 100000) : 0;
	const cacheWrite = chance(0.3) ? randInt(0, 20000) : 0;
	const stopReason = calls.length ? "toolUse" : weighted([["stop", 10], ["length", 1], ["error", 1], ["aborted", 1]]);
	const msg = {
		role: "assistant",
		content,
		api,
		provider,
		model,
		usage: {
			input,
			output,
			cacheRead,
			cacheWrite,
			totalTokens: input + output + cacheRead + cacheWrite,
			cost: { input: input * 3e-6, output: output * 15e-6, cacheRead: cacheRead * 3e-7, cacheWrite: cacheWrite * 3.75e-6, total: 0 },
		},
		stopReason,
	};
	msg.usage.cost.total = msg.usage.cost.input + msg.usage.cost.output + msg.usage.cost.cacheRead + msg.usage.cost.cacheWrite;
	if (stopReason === "error") msg.errorMessage = `Error: ${words(1, 4)}`;
	return withTs(msg);
}
function toolResultMessage() {
	const call = lastToolCalls.length ? lastToolCalls.shift() : { id: `call_orphan_${++toolCallCounter}`, name: pick(TOOLS) };
	const n = randInt(1, 2);
	const content = Array.from({ length: n }, () => ({ type: "text", text: chance(0.5) ? text() : `${words(1, 6)}\n${words(1, 6)}\n` }));
	if (chance(0.05)) content.push({ ...IMAGE });
	const msg = { role: "toolResult", toolCallId: call.id, toolName: call.name, content, isError: chance(0.15) };
	if (chance(0.3)) msg.details = { diff: "-a\n+b" };
	return withTs(msg);
}
function bashExecutionMessage() {
	const msg = {
		role: "bashExecution",
		command: `echo ${pick(WORDS)}`,
		output: text(),
		exitCode: pick([0, 0, 1, 127, undefined]),
		cancelled: chance(0.1),
		truncated: false,
	};
	if (chance(0.2)) msg.excludeFromContext = true;
	return withTs(msg);
}
function customRoleMessage() {
	return withTs({ role: "custom", customType: pick(["ext-a", "ext-b"]), content: chance(0.5) ? text() : [textBlock()], display: chance(0.5) });
}
function labelText() {
	return pick(["checkpoint-1", "good", "✨ nice", "[b]x[/b]", " spaced ", "bug 🐛", "v2", "a label with many words", "日本"]);
}

// ---------------------------------------------------------------------------
// session generation
// ---------------------------------------------------------------------------
const stats = {
	sessionsStarted: 0, noAssistantSessions: 0, branchedSessions: 0, forkFromSessions: 0, ops: {},
};
const countOp = (op) => {
	stats.ops[op] = (stats.ops[op] ?? 0) + 1;
};

function pathIds(sm) {
	return sm.getBranch().map((e) => e.id);
}

function runSession(index) {
	stats.sessionsStarted++;
	const cwd = pick(CWDS);
	tick();
	// sessionDir omitted: pi computes <agentDir>/sessions/--<encoded cwd>--/
	let sm = SessionManager.create(cwd);
	const noAssistant = chance(0.08);
	if (noAssistant) stats.noAssistantSessions++;
	lastToolCalls = [];

	const append = (fn) => {
		tick();
		return fn();
	};

	// prelude: a few settings entries, then the first user message and (usually) an assistant reply
	const nPrelude = randInt(0, 2);
	for (let i = 0; i < nPrelude; i++) {
		const k = pick(["model", "thinking", "info"]);
		if (k === "model") {
			currentModel = pick(MODELS);
			append(() => sm.appendModelChange(currentModel[0], currentModel[1]));
		} else if (k === "thinking") append(() => sm.appendThinkingLevelChange(pick(THINKING)));
		else append(() => sm.appendSessionInfo(words(1, 3)));
	}
	append(() => sm.appendMessage(userMessage()));
	if (!noAssistant) append(() => sm.appendMessage(assistantMessage()));

	const nOps = randInt(10, 60);
	const table = [
		["user", 18], ["assistant", noAssistant ? 0 : 18], ["toolResult", 10], ["compaction", 4], ["labelSet", 5],
		["labelClear", 2], ["sessionInfo", 3], ["modelChange", 3], ["thinking", 3], ["customMessage", 4],
		["customEntry", 3], ["branch", 6], ["branchWithSummary", 4], ["resetLeaf", 0.7], ["bashExecution", 2],
		["customRole", 1], ["createBranchedSession", 1.6], ["forkFrom", noAssistant ? 0 : 0.4],
	];
	for (let k = 0; k < nOps; k++) {
		const op = weighted(table);
		const entries = sm.getEntries();
		const anyEntry = () => pick(entries).id;
		countOp(op);
		switch (op) {
			case "user":
				append(() => sm.appendMessage(userMessage()));
				break;
			case "assistant":
				append(() => sm.appendMessage(assistantMessage()));
				break;
			case "toolResult":
				append(() => sm.appendMessage(toolResultMessage()));
				break;
			case "bashExecution":
				append(() => sm.appendMessage(bashExecutionMessage()));
				break;
			case "customRole":
				append(() => sm.appendMessage(customRoleMessage()));
				break;
			case "compaction": {
				const onPath = pathIds(sm);
				let firstKept;
				if (onPath.length && chance(0.9)) firstKept = pick(onPath);
				else if (entries.length) firstKept = anyEntry(); // possibly on another branch
				else break;
				append(() =>
					sm.appendCompaction(
						`Summary: ${text()}`,
						firstKept,
						randInt(1000, 200000),
						chance(0.5) ? { readFiles: ["a.py"], modifiedFiles: [] } : undefined,
						chance(0.2) ? true : undefined,
					),
				);
				break;
			}
			case "labelSet":
				if (!entries.length) break;
				append(() => sm.appendLabelChange(anyEntry(), labelText()));
				break;
			case "labelClear": {
				if (!entries.length) break;
				const labeled = entries.filter((e) => sm.getLabel(e.id) !== undefined);
				const target = labeled.length && chance(0.75) ? pick(labeled).id : anyEntry();
				append(() => sm.appendLabelChange(target, chance(0.7) ? undefined : ""));
				break;
			}
			case "sessionInfo":
				append(() => sm.appendSessionInfo(chance(0.25) ? pick(["", "   "]) : chance(0.2) ? `  ${words(1, 4)} ` : words(1, 4)));
				break;
			case "modelChange":
				currentModel = pick(MODELS);
				append(() => sm.appendModelChange(currentModel[0], currentModel[1]));
				break;
			case "thinking":
				append(() => sm.appendThinkingLevelChange(pick(THINKING)));
				break;
			case "customMessage": {
				const content = chance(0.5) ? text() : [textBlock(), ...(chance(0.3) ? [textBlock()] : [])];
				append(() =>
					sm.appendCustomMessageEntry(pick(["ext-a", "ext-b", "notes"]), content, chance(0.6), chance(0.3) ? { k: 1 } : undefined),
				);
				break;
			}
			case "customEntry":
				append(() => sm.appendCustomEntry(pick(["ext-a", "state"]), chance(0.8) ? { count: randInt(0, 99) } : undefined));
				break;
			case "branch":
				if (!entries.length) break;
				sm.branch(anyEntry());
				lastToolCalls = [];
				break;
			case "branchWithSummary": {
				const from = !entries.length || chance(0.08) ? null : anyEntry();
				const summary = chance(0.15) ? "" : `Branch summary: ${text()}`;
				append(() => sm.branchWithSummary(from, summary, chance(0.5) ? { readFiles: [], modifiedFiles: ["b.py"] } : undefined, chance(0.2) ? true : undefined));
				lastToolCalls = [];
				break;
			}
			case "resetLeaf":
				sm.resetLeaf();
				lastToolCalls = [];
				break;
			case "createBranchedSession": {
				if (!entries.length) break;
				const onPath = pathIds(sm);
				const leaf = onPath.length && chance(0.7) ? pick(onPath) : anyEntry();
				tick();
				sm.createBranchedSession(leaf); // sm now IS the fork (pi's /fork behaviour)
				stats.branchedSessions++;
				lastToolCalls = [];
				break;
			}
			case "forkFrom": {
				const src = sm.getSessionFile();
				if (!src || !fs.existsSync(src)) break;
				tick();
				sm = SessionManager.forkFrom(src, pick(CWDS));
				stats.forkFromSessions++;
				lastToolCalls = [];
				break;
			}
		}
	}
}

for (let i = 0; i < count; i++) runSession(i);

// ---------------------------------------------------------------------------
// record what pi says the files mean
// ---------------------------------------------------------------------------
function messageText(m) {
	if (m.role === "compactionSummary" || m.role === "branchSummary") return m.summary ?? "";
	const c = m.content;
	if (typeof c === "string") return c;
	if (Array.isArray(c)) return c.filter((b) => b && b.type === "text").map((b) => b.text).join("\n");
	return "";
}
function ctxRecord(leaf, ctx) {
	return {
		leaf,
		thinkingLevel: ctx.thinkingLevel,
		model: ctx.model ? { provider: ctx.model.provider, modelId: ctx.model.modelId } : null,
		messages: ctx.messages.map((m) => ({ role: m.role, text: messageText(m) })),
	};
}
function flattenTree(roots) {
	const out = [];
	const visit = (node, parentId) => {
		out.push({ id: node.entry.id, parentId, type: node.entry.type, label: node.label ?? null });
		for (const child of node.children) visit(child, node.entry.id);
	};
	for (const r of roots) visit(r, null);
	return out;
}

const files = [];
for (const bucket of fs.readdirSync(SESSIONS_ROOT).sort()) {
	const dir = path.join(SESSIONS_ROOT, bucket);
	if (!fs.statSync(dir).isDirectory()) continue;
	for (const f of fs.readdirSync(dir).sort()) if (f.endsWith(".jsonl")) files.push(path.join(dir, f));
}

const sessions = [];
for (const file of files) {
	const before = fs.readFileSync(file);
	const sm = SessionManager.open(file);
	const after = fs.readFileSync(file);
	if (!before.equals(after)) throw new Error(`SessionManager.open modified ${file}`);
	const header = sm.getHeader();
	const entries = sm.getEntries();
	const contexts = [ctxRecord(null, sm.buildSessionContext())];
	const ids = entries.map((e) => e.id);
	const chosen = new Set();
	const want = Math.min(5, ids.length);
	while (chosen.size < want) chosen.add(pick(ids));
	for (const id of chosen) contexts.push(ctxRecord(id, buildSessionContext(entries, id)));
	sessions.push({
		path: file,
		id: header.id,
		cwd: header.cwd,
		parentSession: header.parentSession ?? null,
		sessionName: sm.getSessionName() ?? null,
		leafId: sm.getLeafId(),
		entryCount: entries.length,
		tree: flattenTree(sm.getTree()),
		contexts,
	});
}

const listed = await SessionManager.listAll();
const list = listed.map((s) => ({
	path: s.path,
	id: s.id,
	cwd: s.cwd,
	name: s.name ?? null,
	parentSession: s.parentSessionPath ?? null,
	created: s.created.toISOString(),
	modified: s.modified.toISOString(),
	messageCount: s.messageCount,
	firstMessage: s.firstMessage,
	allMessagesText: s.allMessagesText,
}));
if (list.length !== files.length) {
	throw new Error(`listAll returned ${list.length} sessions but ${files.length} files were written`);
}

const expected = {
	piVersion: pkgJson.version,
	seed,
	count,
	deterministic: !live,
	sessions,
	list,
};
fs.writeFileSync(path.join(OUT_DIR, "expected.json"), `${JSON.stringify(expected, null, 1)}\n`);

const branchy = sessions.filter((s) => {
	const kids = new Map();
	for (const n of s.tree) if (n.parentId) kids.set(n.parentId, (kids.get(n.parentId) ?? 0) + 1);
	return [...kids.values()].some((v) => v > 1);
}).length;
process.stderr.write(
	`wrote ${files.length} session files (${sessions.filter((s) => s.parentSession).length} with parentSession, ` +
		`${branchy} with branches) from ${stats.sessionsStarted} sessions ` +
		`(${stats.noAssistantSessions} without assistant) -> ${path.join(OUT_DIR, "expected.json")}\n`,
);
