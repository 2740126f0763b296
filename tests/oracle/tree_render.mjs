#!/usr/bin/env node
// Print pi's own /tree selector view of session files as JSON, for differential tests of
// seance's tree model: for every filter mode (and an optional search), the visible entry
// ids in order and each rendered row as plain text (ANSI stripped, cursor column removed);
// in the default view also the branch-segment jumps from every row and the view with each
// foldable entry folded.
// usage: node tree_render.mjs [--search Q]... FILE...
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { initTheme } from "./node_modules/@mariozechner/pi-coding-agent/dist/modes/interactive/theme/theme.js";
import { TreeSelectorComponent } from "./node_modules/@mariozechner/pi-coding-agent/dist/modes/interactive/components/tree-selector.js";

const MODES = ["default", "no-tools", "user-only", "labeled-only", "all"];
const ANSI = /\x1b\[[0-9;?]*[ -\/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

initTheme("dark");
const searches = [];
const files = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
	if (args[i] === "--search") searches.push(args[++i]);
	else files.push(args[i]);
}

function view(list) {
	const ids = list.filteredNodes.map((n) => n.node.entry.id);
	const lines = list.render(100000).map((line) => line.replace(ANSI, ""));
	const rows = ids.length ? lines.slice(0, ids.length).map((line) => line.slice(2)) : [];
	return { ids, rows, status: lines[lines.length - 1].trim() };
}

const out = [];
for (const file of files) {
	const sm = SessionManager.open(file);
	const leaf = sm.getLeafId();
	const selector = new TreeSelectorComponent(sm.getTree(), leaf, 1000000, () => {}, () => {}, () => {});
	const list = selector.getTreeList();
	const views = {};
	for (const mode of MODES) {
		list.filterMode = mode;
		list.foldedNodes.clear();
		list.applyFilter();
		views[mode] = view(list);
	}
	// Segment jumps and folds in the default view: where each jump lands from every row,
	// and the view after folding each foldable entry on its own.
	list.filterMode = "default";
	list.foldedNodes.clear();
	list.applyFilter();
	const base = list.filteredNodes.map((n) => n.node.entry.id);
	const jumps = { up: [], down: [] };
	for (let i = 0; i < base.length; i++) {
		list.selectedIndex = i;
		jumps.up.push(list.findBranchSegmentStart("up"));
		jumps.down.push(list.findBranchSegmentStart("down"));
	}
	const folds = [];
	for (const id of base.filter((id) => list.isFoldable(id))) {
		list.foldedNodes.clear();
		list.foldedNodes.add(id);
		list.applyFilter();
		folds.push({ id, ...view(list) });
	}
	list.foldedNodes.clear();
	const searched = {};
	list.filterMode = "default";
	for (const query of searches) {
		list.searchQuery = query;
		list.applyFilter();
		searched[query] = view(list);
	}
	out.push({ path: file, leafId: leaf, views, jumps, folds, searched });
}
process.stdout.write(JSON.stringify(out));
