#!/usr/bin/env node
// Print the session dir pi 0.73.1 would use when started in the current directory without
// --session-dir, for the roots-from-settings tests: {agentDir, sessionDir (as pi passes it on,
// or null), resolved (absolute, or null)}.  The three lines below are main.js's own expression
// (not exported), over pi's real getAgentDir, expandTildePath and SettingsManager (settings.json
// global and project, merge, parse-error handling, `~` expansion).
// usage: (cd CWD && HOME=… PI_CODING_AGENT_DIR=… node session_dir.mjs)
import { resolve } from "node:path";
import { ENV_SESSION_DIR, expandTildePath, getAgentDir } from "./node_modules/@mariozechner/pi-coding-agent/dist/config.js";
import { SettingsManager } from "./node_modules/@mariozechner/pi-coding-agent/dist/core/settings-manager.js";

const cwd = process.cwd();
const agentDir = getAgentDir();
const startupSettingsManager = SettingsManager.create(cwd, agentDir);
const envSessionDir = process.env[ENV_SESSION_DIR];
const sessionDir = (envSessionDir ? expandTildePath(envSessionDir) : undefined) ?? startupSettingsManager.getSessionDir();
process.stdout.write(
	JSON.stringify({ agentDir, sessionDir: sessionDir ?? null, resolved: sessionDir ? resolve(sessionDir) : null }),
);
