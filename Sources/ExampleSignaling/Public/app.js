// The demo page: joins a room through the example signaling server, publishes camera and microphone on one
// peer connection, receives the room's talker slots on another, and labels each slot with the participant
// the node's slot map names. Everything the page knows is in `window.demo` (the browser test reads it).
"use strict";

const demo = (window.demo = {
  joined: false, participant: null, room: null, role: null, mode: null, maxTalkers: 4,
  slots: {}, kinds: {}, talkers: [], dominant: null, numberOfVideos: null, bitrateKbps: 0,
  audioPackets: {}, videoFrames: {}, roster: null, names: {}, lastResult: null, left: null, errors: [],
});

const $ = (selector) => document.querySelector(selector);
let ws, publishPC, subscribePC, pendingCommands = new Map(), nextCommand = 1;

function send(message) { ws.send(JSON.stringify(message)); }

function connect(join) {
  ws = new WebSocket(`ws://${location.host}/ws`);
  ws.onopen = () => send({ type: "join", ...join });
  ws.onmessage = (m) => receive(JSON.parse(m.data));
  ws.onclose = () => { $("#status").textContent = demo.left ? `left: ${demo.left}` : "disconnected"; };
}

async function receive(m) {
  switch (m.type) {
    case "joined": return joined(m);
    case "answer": {
      const pc = m.kind === "publish" ? publishPC : subscribePC;
      return pc.setRemoteDescription({ type: "answer", sdp: m.sdp });
    }
    case "event": return nodeEvent(m.event);
    case "roster": return showRoster(m.room);
    case "result": {
      demo.lastResult = m;
      $("#last-result").textContent = m.result === 0 ? "done" : `refused: ${m.result} ${m.msg || ""}`;
      const resolve = pendingCommands.get(m.id);
      if (resolve) { pendingCommands.delete(m.id); resolve(m); }
      return;
    }
    case "left":
      demo.left = m.reason;
      for (const pc of [publishPC, subscribePC]) pc && pc.close();
      $("#status").textContent = `left: ${m.reason}`;
      return;
    case "error":
      demo.errors.push(m.msg);
      $("#last-result").textContent = m.msg;
  }
}

async function joined(m) {
  Object.assign(demo, { joined: true, participant: m.participant, room: m.room, role: m.role, mode: m.mode, maxTalkers: m.max_active_talkers });
  document.body.classList.toggle("moderator", m.role === "moderator");
  document.body.classList.toggle("lecture", m.mode === "lecture");
  $("#join").hidden = true;
  $("#conference").hidden = false;
  $("#status").textContent = `${m.room} (${m.mode}) as ${m.participant}, ${m.role}`;
  await publish();
  await subscribe();
}

// Camera and microphone, sent on their own connection.
async function publish() {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: { width: 640, height: 480 } });
  $("#local").srcObject = stream;
  publishPC = new RTCPeerConnection({ bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" });
  for (const track of stream.getTracks()) publishPC.addTransceiver(track, { direction: "sendonly", streams: [stream] });
  await publishPC.setLocalDescription(await publishPC.createOffer());
  send({ type: "offer", kind: "publish", sdp: publishPC.localDescription.sdp });
}

// One receiving connection with maxTalkers audio and video slots; each m-line (mid) is a slot.
async function subscribe() {
  subscribePC = new RTCPeerConnection({ bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" });
  for (let i = 0; i < demo.maxTalkers; i++) subscribePC.addTransceiver("audio", { direction: "recvonly" });
  for (let i = 0; i < demo.maxTalkers; i++) subscribePC.addTransceiver("video", { direction: "recvonly" });
  subscribePC.ontrack = (e) => {
    const mid = e.transceiver.mid;
    demo.kinds[mid] = e.track.kind;
    const stream = new MediaStream([e.track]);
    if (e.track.kind === "audio") {
      const audio = document.createElement("audio");
      audio.autoplay = true;
      audio.srcObject = stream;
      $("#audio-sinks").append(audio);
    } else {
      const tile = document.createElement("div");
      tile.className = "tile";
      tile.dataset.mid = mid;
      tile.hidden = true;
      tile.innerHTML = `<video autoplay muted playsinline></video><span class="label"></span>`;
      tile.querySelector("video").srcObject = stream;
      $("#tiles").append(tile);
    }
  };
  await subscribePC.setLocalDescription(await subscribePC.createOffer());
  send({ type: "offer", kind: "subscribe", sdp: subscribePC.localDescription.sdp });
  setInterval(readStats, 1000);
}

function nodeEvent(e) {
  switch (e.type) {
    case "active_talkers":
      demo.talkers = e.talkers;
      demo.slots = Object.fromEntries(e.slots.map((s) => [s.mid, s.participant]));
      break;
    case "dominant_speaker": demo.dominant = e.participant; break;
    case "bandwidth_alert": demo.numberOfVideos = e.number_of_videos; break;
  }
  render();
}

function nameOf(id) { return id ? demo.names[id] || id : ""; }

function render() {
  for (const tile of document.querySelectorAll(".tile")) {
    const who = demo.slots[tile.dataset.mid];
    tile.hidden = !who;
    tile.dataset.participant = who || "";
    tile.querySelector(".label").textContent = nameOf(who);
    tile.classList.toggle("dominant", !!who && who === demo.dominant);
  }
  $("#talkers").innerHTML = "";
  for (const t of demo.talkers) {
    const li = document.createElement("li");
    li.textContent = `${nameOf(t.participant)}${t.pinned ? " (pinned)" : ""}${t.speaking ? " - speaking" : ""}`;
    li.classList.toggle("dominant", t.participant === demo.dominant);
    $("#talkers").append(li);
  }
  // Until the node's first bandwidth_alert, the videos allowed are the video slots it fills.
  const filled = Object.entries(demo.slots).filter(([mid, who]) => who && demo.kinds[mid] === "video").length;
  $("#videos").textContent = demo.numberOfVideos ?? filled;
}

function showRoster(room) {
  demo.roster = room;
  for (const p of room.participants) demo.names[p.participant] = p.name || p.participant;
  const raised = room.floor.raised_hands, approved = room.floor.approved_hands;
  $("#room-state").textContent = [room.locked && "locked", room.hard_muted && "room muted", `pins: ${room.pinned.map(nameOf).join(", ") || "none"}`]
    .filter(Boolean).join(" · ");
  const list = $("#roster");
  list.innerHTML = "";
  for (const p of room.participants) {
    const li = document.createElement("li");
    const badges = [p.role === "moderator" && "moderator", p.hard_muted.audio && "audio muted", p.hard_muted.video && "video muted",
      room.pinned.includes(p.participant) && "pinned", raised.includes(p.participant) && "hand up", approved.includes(p.participant) && "has the floor"]
      .filter(Boolean).map((b) => `<span class="badge ${b.includes("muted") ? "muted" : b.includes("hand") || b.includes("floor") ? "hand" : ""}">${b}</span>`);
    li.innerHTML = `<span class="who">${escapeHTML(p.name || p.participant)}${p.participant === demo.participant ? " (you)" : ""}${badges.join("")}</span>`;
    if (demo.role === "moderator" && p.participant !== demo.participant) {
      const buttons = [
        [p.hard_muted.audio ? "unmute-audio" : "mute-audio", p.hard_muted.audio ? "Unmute audio" : "Mute audio"],
        [p.hard_muted.video ? "unmute-video" : "mute-video", p.hard_muted.video ? "Unmute video" : "Mute video"],
        [room.pinned.includes(p.participant) ? "unpin" : "pin", room.pinned.includes(p.participant) ? "Unpin" : "Pin"],
        ["drop", "Drop"],
      ];
      if (raised.includes(p.participant)) buttons.push(["grant", "Grant floor"], ["deny", "Deny"]);
      if (approved.includes(p.participant)) buttons.push(["release", "Release floor"]);
      for (const [action, label] of buttons) {
        const b = document.createElement("button");
        b.dataset.action = action;
        b.dataset.target = p.participant;
        b.textContent = label;
        li.append(b);
      }
    }
    list.append(li);
  }
  render();
}

function escapeHTML(s) { return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`); }

// A command to the signaling server; resolves with the node's answer.
demo.command = (action, fields = {}) => new Promise((resolve) => {
  const id = nextCommand++;
  pendingCommands.set(id, resolve);
  send({ type: "command", id, action, ...fields });
});

const actions = {
  "mute-room": () => demo.command("mute_room", { audio: true }),
  "unmute-room": () => demo.command("mute_room", { audio: false }),
  "lock": () => demo.command("lock", { locked: true }),
  "unlock": () => demo.command("lock", { locked: false }),
  "raise-hand": () => demo.command("floor", { floor_action: "request" }),
  "lower-hand": () => demo.command("floor", { floor_action: "cancel" }),
  "finish": () => demo.command("floor", { floor_action: "finish" }),
  "mute-audio": (t) => demo.command("mute", { target: t, audio: true }),
  "unmute-audio": (t) => demo.command("mute", { target: t, audio: false }),
  "mute-video": (t) => demo.command("mute", { target: t, video: true }),
  "unmute-video": (t) => demo.command("mute", { target: t, video: false }),
  "pin": (t) => demo.command("pin", { target: t }),
  "unpin": (t) => demo.command("unpin", { target: t }),
  "drop": (t) => demo.command("drop", { target: t }),
  "grant": (t) => demo.command("floor", { floor_action: "grant", target: t }),
  "deny": (t) => demo.command("floor", { floor_action: "deny", target: t }),
  "release": (t) => demo.command("floor", { floor_action: "release", target: t }),
};

document.addEventListener("click", (e) => {
  const action = e.target.dataset && e.target.dataset.action;
  if (action && actions[action]) actions[action](e.target.dataset.target);
});

// Received packets per slot and the total bitrate, from the receiving connection's stats.
let lastBytes = 0, lastTime = 0;
async function readStats() {
  if (!subscribePC) return;
  let bytes = 0;
  const stats = await subscribePC.getStats();
  stats.forEach((s) => {
    if (s.type !== "inbound-rtp") return;
    bytes += s.bytesReceived || 0;
    if (s.kind === "audio") demo.audioPackets[s.mid] = s.packetsReceived || 0;
    else demo.videoFrames[s.mid] = s.framesDecoded || 0;
  });
  const now = performance.now();
  if (lastTime) demo.bitrateKbps = Math.round(((bytes - lastBytes) * 8) / (now - lastTime));
  lastBytes = bytes;
  lastTime = now;
  $("#bitrate").textContent = demo.bitrateKbps;
}

$("#join").addEventListener("submit", (e) => {
  e.preventDefault();
  connect(Object.fromEntries(new FormData(e.target)));
});

// ?room=demo&name=Alice&role=moderator&mode=lecture&autojoin=1 joins at once (used by the browser test).
const params = new URLSearchParams(location.search);
for (const key of ["room", "name", "role", "mode"]) if (params.has(key)) $(`#join [name=${key}]`).value = params.get(key);
if (params.get("autojoin") === "1") connect(Object.fromEntries(new FormData($("#join"))));
