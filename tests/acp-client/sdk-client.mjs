// An editor's side of ACP, on the official TypeScript SDK's client app (the successor of its
// ClientSideConnection): spawns `neocode acp` and runs initialize, session/new, a prompt whose
// tool call asks permission (answered "allow once"), a cancelled prompt, session/load
// (counting the replayed updates), session/list and session/fork, then prints a JSON summary
// on stdout.
//
// usage: node sdk-client.mjs <acp-clients folder> <neocode binary> <workspace>
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [clients, bin, cwd] = process.argv.slice(2);
if (!clients || !bin || !cwd) {
  console.error("usage: node sdk-client.mjs <acp-clients folder> <neocode binary> <workspace>");
  process.exit(2);
}
const require = createRequire(join(clients, "package.json"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk/unstable")).href);
const { methods } = acp;

const agent = spawn(bin, ["acp"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => agent.on("exit", (code) => resolve(code)));
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

// Updates by session, in arrival order; permission requests as they were asked.
const updates = new Map();
const permissions = [];
const seen = (id) => {
  if (!updates.has(id)) updates.set(id, []);
  return updates.get(id);
};
const count = (id, kind) => seen(id).filter((u) => u.sessionUpdate === kind).length;
const text = (list) =>
  list
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");

const app = acp
  .client({ name: "neocode-acp-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    seen(params.sessionId).push(params.update);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    permissions.push({
      toolCallId: params.toolCall.toolCallId,
      options: params.options.map((o) => o.kind),
    });
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  });

const summary = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  const { sessionId } = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });

  // 1. A prompt with a tool call that asks permission.
  const first = await ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "write the notes" }],
  });
  const turn = seen(sessionId).splice(0);

  // 2. A prompt cancelled while the model is still thinking.
  const slow = ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "take your time" }],
  });
  await new Promise((r) => setTimeout(r, 500));
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  const cancelled = await slow;
  seen(sessionId).splice(0);

  // 3. Load: the stored transcript replayed as updates.
  await ctx.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
  const replay = seen(sessionId).splice(0);

  // 4. List, 5. fork.
  const listed = await ctx.request(methods.agent.session.list, { cwd });
  const fork = await ctx.request(methods.agent.session.fork, { sessionId, cwd, mcpServers: [] });

  return {
    protocolVersion: init.protocolVersion,
    agent: init.agentInfo?.name,
    capabilities: {
      load: init.agentCapabilities?.loadSession === true,
      list: Boolean(init.agentCapabilities?.sessionCapabilities?.list),
      fork: Boolean(init.agentCapabilities?.sessionCapabilities?.fork),
      resume: Boolean(init.agentCapabilities?.sessionCapabilities?.resume),
      close: Boolean(init.agentCapabilities?.sessionCapabilities?.close),
    },
    sessionId,
    prompt: {
      stopReason: first.stopReason,
      toolCalls: turn.filter((u) => u.sessionUpdate === "tool_call").map((u) => ({
        id: u.toolCallId,
        kind: u.kind,
        diff: u.content?.some((c) => c.type === "diff") ?? false,
      })),
      completed: turn.filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed").length,
      text: text(turn),
    },
    permissions,
    cancel: { stopReason: cancelled.stopReason },
    load: {
      updates: replay.length,
      user: replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text),
      toolCalls: replay.filter((u) => u.sessionUpdate === "tool_call").length,
      text: text(replay),
    },
    list: listed.sessions.map((s) => s.sessionId),
    fork: fork.sessionId,
  };
});

agent.stdin.end();
const code = await exited;
console.log(JSON.stringify({ ...summary, exitCode: code }));
