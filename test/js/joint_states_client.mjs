// Subscribe to one topic of a Foxglove WebSocket server with Foxglove's own JavaScript client
// (@foxglove/ws-protocol FoxgloveClient over the `ws` package) offering exactly ONE subprotocol name, decode the
// CDR payloads with the decoder Foxglove's apps use (@foxglove/rosmsg2-serialization MessageReader, schema text
// parsed by @foxglove/rosmsg), and print one JSON line with what arrived. Assertions are the caller's
// (test/test_foxglove_js_client.py); this script only fails on protocol errors or the timeout.
//
// usage: node joint_states_client.mjs URL SUBPROTOCOL [TOPIC] [COUNT] [TIMEOUT_S]
import wsProtocol from "@foxglove/ws-protocol";
import { parse } from "@foxglove/rosmsg";
import { MessageReader } from "@foxglove/rosmsg2-serialization";
import WebSocket from "ws";

const { FoxgloveClient } = wsProtocol; // a CommonJS package: its named exports hang off the default

const [url, subprotocol, topic = "/joint_states", count = "20", timeoutS = "30"] = process.argv.slice(2);
if (!url || !subprotocol) {
  console.error("usage: node joint_states_client.mjs URL SUBPROTOCOL [TOPIC] [COUNT] [TIMEOUT_S]");
  process.exit(64);
}
const wanted = Number(count);
const out = { offered: [subprotocol], protocol: null, serverInfo: null, channel: null, messages: [] };

function finish(code, error) {
  if (error) out.error = String(error);
  console.log(JSON.stringify(out));
  process.exit(code);
}

setTimeout(() => finish(2, `timed out after ${timeoutS} s with ${out.messages.length} of ${wanted}`),
  Number(timeoutS) * 1000);

const ws = new WebSocket(url, [subprotocol]);
ws.on("upgrade", (res) => { out.protocol = res.headers["sec-websocket-protocol"] ?? null; });
ws.on("unexpected-response", (_req, res) => finish(1, `handshake refused: HTTP ${res.statusCode}`));
const client = new FoxgloveClient({ ws });
let subscription = null;
let reader = null;

client.on("error", (err) => finish(1, err));
client.on("close", () => finish(1, "connection closed"));
client.on("serverInfo", (info) => {
  out.serverInfo = { name: info.name, capabilities: info.capabilities, supportedEncodings: info.supportedEncodings };
});
client.on("advertise", (channels) => {
  if (subscription !== null) return;
  const ch = channels.find((c) => c.topic === topic);
  if (!ch) return;
  out.channel = { topic: ch.topic, encoding: ch.encoding, schemaName: ch.schemaName,
    schemaEncoding: ch.schemaEncoding };
  reader = new MessageReader(parse(ch.schema, { ros2: true }));
  subscription = client.subscribe(ch.id);
});
client.on("message", ({ subscriptionId, timestamp, data }) => {
  if (subscriptionId !== subscription) return;
  const msg = reader.readMessage(data);
  const stampNs = BigInt(msg.header.stamp.sec) * 1000000000n + BigInt(msg.header.stamp.nanosec);
  out.messages.push({
    logTime: timestamp.toString(), stamp: stampNs.toString(),
    name: msg.name, position: Array.from(msg.position, (v) => (Number.isFinite(v) ? v : String(v))),
    finite: Array.from(msg.position).every(Number.isFinite),
  });
  if (out.messages.length >= wanted) {
    client.close();
    finish(0);
  }
});
