// The demo page: joins a room through the example signaling server, publishes camera and microphone on one
// peer connection, receives the room's talker slots on another, and labels each slot with the participant
// the node's slot map names. The number of talkers received can change during the call: the receiving
// connection is renegotiated (slots added or stopped, a new offer, the node's answer) and stays the same.
// Screen share (sending one, and the screen slot that shows the room's) is in screen.js.
// Everything the page knows is in `window.demo` (the browser tests read it).
"use strict";

const demo = (window.demo = {
  streamingEvents: [],
  live: false,
  joined: false, awaited: false, participant: null, room: null, role: null, mode: null, maxTalkers: 4, talkerCount: 4,
  slots: {}, sources: {}, kinds: {}, talkers: [], dominant: null, numberOfVideos: null, bitrateKbps: 0,
  audioPackets: {}, videoFrames: {}, packets: {}, roster: null, names: {}, lastResult: null, left: null, errors: [],
  changes: { publish: [], subscribe: [] },  // what the node made of each offer: "created", "renegotiated", ...
  // This page's screen share, and the screen slot (kept out of `kinds` and the per-slot counts above, which
  // are the talker slots): who the node shows there and what was received.
  screenShare: { sharing: false, width: null, height: null, error: null },
  screenSlot: { mid: null, participant: null, source: null, packets: 0, frames: 0, frameWidth: null, frameHeight: null,
    keyFrames: null, pictureLossRequests: null, freezes: null, freezeSeconds: null },
});

const $ = (selector) => document.querySelector(selector);
let ws, publishPC, subscribePC, pendingCommands = new Map(), nextCommand = 1;
const pendingAnswers = { publish: [], subscribe: [] };
const sinks = new Map();  // mid -> the <audio> element or the video tile that plays that slot

function send(message) { ws.send(JSON.stringify(message)); }

function connect(join) {
  demo.joinRequest = join;
  ws = new WebSocket(`ws://${location.host}/ws`);
  ws.onopen = () => send({ type: "join", ...join });
  ws.onmessage = (m) => receive(JSON.parse(m.data));
  ws.onclose = () => { $("#status").textContent = demo.left ? `left: ${demo.left}` : "disconnected"; };
}

async function receive(m) {
  switch (m.type) {
    case "joined": return joined(m);
    // A moderator let this page in (it waited in a knock-enabled room): the room's events and roster follow.
    case "approved":
      Object.assign(demo, { awaited: false, dominant: m.dominant_speaker });
      $("#status").textContent = `${demo.room} (${demo.mode}) as ${demo.participant}, ${demo.role}`;
      return render();
    case "answer": {
      const resolve = pendingAnswers[m.kind].shift();
      return resolve && resolve(m);
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
    case "rejoin":
      // The node the room was on died (a cluster's `node_lost`): the server forgot this participant; join
      // again, which places the room on a live node, with new connections.
      demo.rejoins = (demo.rejoins || 0) + 1;
      for (const pc of [publishPC, subscribePC]) pc && pc.close();
      for (const mid of [...sinks.keys()]) { sinks.get(mid).remove(); sinks.delete(mid); }
      Object.assign(demo, { joined: false, slots: {}, kinds: {}, talkers: [] });
      ws.onclose = null;
      ws.close();
      connect(demo.joinRequest);
      return;
    case "left":
      demo.left = m.reason;
      for (const pc of [publishPC, subscribePC]) pc && pc.close();
      $("#status").textContent = `left: ${m.reason}`;
      return;
    case "error":
      demo.errors.push(m.msg);
      $("#last-result").textContent = m.msg;
      if (!demo.joined) $("#status").textContent = `not joined: ${m.msg}`;
  }
}

async function joined(m) {
  Object.assign(demo, { joined: true, awaited: !!m.awaited, participant: m.participant, room: m.room, role: m.role, mode: m.mode,
    maxTalkers: m.max_active_talkers, talkerCount: m.max_active_talkers, dominant: m.dominant_speaker });
  Object.assign($("#talker-count"), { max: m.max_active_talkers, value: m.max_active_talkers });
  document.body.classList.toggle("moderator", m.role === "moderator");
  document.body.classList.toggle("lecture", m.mode === "lecture");
  $("#join").hidden = true;
  $("#conference").hidden = false;
  $("#status").textContent = m.awaited ? `${m.room}: waiting for a moderator to let you in`
    : `${m.room} (${m.mode}) as ${m.participant}, ${m.role}`;
  rtcConfig.iceServers = m.ice_servers || [];
  await publish();
  await subscribe();
}

// Camera and microphone, sent on their own connection.
async function publish() {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: { width: 640, height: 480 } });
  $("#local").srcObject = stream;
  publishPC = new RTCPeerConnection(rtcConfig);
  for (const track of stream.getTracks()) publishPC.addTransceiver(track, { direction: "sendonly", streams: [stream] });
  await negotiate("publish");
}

// The receiving connection: talkerCount audio and video slots (recvonly m-lines); each mid is a slot.
async function subscribe() {
  subscribePC = new RTCPeerConnection(rtcConfig);
  subscribePC.ontrack = (e) => (e.transceiver === screenShare.slot ? playScreenSlot(e.track) : addSink(e.transceiver.mid, e.track));
  await resizeSlots(demo.talkerCount);
  setInterval(readStats, 1000);
}

// One offer/answer exchange on a connection ("publish" or "subscribe"): `prepare` changes the connection
// (transceivers, ICE restart), then the offer goes to the node through the signaling server - the same
// message for the first offer and every later one - and the node's answer is applied. Resolves with what
// the node made of it: "created", "renegotiated", "iceRestarted" or "replaced". Exchanges on one connection
// run one at a time; a refused offer is rolled back.
const negotiations = { publish: Promise.resolve(), subscribe: Promise.resolve() };
// Both connections' configuration; the signaling server's `ice_servers` (a TURN server) join it.
const rtcConfig = { bundlePolicy: "max-bundle", rtcpMuxPolicy: "require", iceServers: [] };

// With ICE servers the offer waits (at most 3 s) for ICE gathering: its relay candidates tell the node which
// of the client's addresses are a TURN server's (reported as `relayed`). Without, it goes at once.
function gathered(pc) {
  if (!rtcConfig.iceServers.length || pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") resolve(); });
    setTimeout(resolve, 3000);
  });
}

function negotiate(kind, prepare = () => {}) {
  const exchange = async () => {
    const pc = kind === "publish" ? publishPC : subscribePC;
    prepare(pc);
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc);
    const answer = await new Promise((resolve) => {
      pendingAnswers[kind].push(resolve);
      send({ type: "offer", kind, sdp: pc.localDescription.sdp, screen_share_mids: screenShareMids(kind) });
    });
    if (answer.error) {
      await pc.setLocalDescription({ type: "rollback" });
      throw new Error(answer.error);
    }
    await pc.setRemoteDescription({ type: "answer", sdp: answer.sdp });
    demo.changes[kind].push(answer.change);
    return answer.change;
  };
  const done = negotiations[kind].then(exchange);
  negotiations[kind] = done.catch(() => {});
  return done;
}

// Grows or shrinks the receiving connection to `count` talker slots of each kind, on the same connection: new
// recvonly transceivers, or the last ones stopped (their m-lines are rejected in the offer), then one offer.
// The node answers "renegotiated"; the slots that stay keep their stream (same SSRC, no new handshake). The
// screen slot is not a talker slot: the first offer adds it, and it stays.
function resizeSlots(count) {
  return negotiate("subscribe", (pc) => {
    for (const kind of ["audio", "video"]) {
      const live = pc.getTransceivers().filter((t) => t.direction !== "stopped" && t.receiver.track.kind === kind && t !== screenShare.slot);
      for (let i = live.length; i < count; i++) pc.addTransceiver(kind, { direction: "recvonly" });
      for (const t of live.slice(count)) {
        removeSink(t.mid);
        t.stop();
      }
    }
    addScreenSlot(pc);
  });
}

// New ICE credentials on a connection (after a network change, say): the node answers "iceRestarted" and
// keeps DTLS and SRTP going.
function restartIce(kind) {
  return negotiate(kind, (pc) => pc.restartIce());
}

// A received slot's player: an <audio> element, or a video tile labelled with the slot's participant.
function addSink(mid, track) {
  demo.kinds[mid] = track.kind;
  const stream = new MediaStream([track]);
  let sink;
  if (track.kind === "audio") {
    sink = document.createElement("audio");
    sink.autoplay = true;
    sink.srcObject = stream;
    $("#audio-sinks").append(sink);
  } else {
    sink = document.createElement("div");
    sink.className = "tile";
    sink.dataset.mid = mid;
    sink.hidden = true;
    sink.innerHTML = `<video autoplay muted playsinline></video><span class="label"></span>`;
    sink.querySelector("video").srcObject = stream;
    $("#tiles").append(sink);
  }
  sinks.set(mid, sink);
  render();
}

function removeSink(mid) {
  if (sinks.has(mid)) sinks.get(mid).remove();
  sinks.delete(mid);
  delete demo.kinds[mid];
}

// The talkers control: the node keeps this participant's talker list `count` long (its talker_count) and the
// receiving connection gets as many slots of each kind. Resolves with the node's result and the change.
demo.setTalkers = async (count) => {
  count = Math.max(1, Math.min(demo.maxTalkers, Math.floor(count) || 1));
  const r = await demo.command("talkers", { count });
  if (r.result !== 0) return { result: r.result, msg: r.msg };
  demo.talkerCount = count;
  $("#talker-count").value = count;
  const change = await resizeSlots(count);
  $("#last-result").textContent = `${count} talker${count > 1 ? "s" : ""} (${change})`;
  return { result: 0, change };
};

// The page's own microphone switch (not a moderator's hard mute, which the node enforces): a disabled track keeps
// its sender and sends silence, so the node hears this participant stop talking. Returns whether there was one.
demo.setMicrophone = (on) => {
  const stream = $("#local").srcObject;
  for (const track of stream ? stream.getAudioTracks() : []) track.enabled = Boolean(on);
  return Boolean(stream && stream.getAudioTracks().length);
};

demo.restartIce = async (kind) => {
  const change = await restartIce(kind);
  $("#last-result").textContent = `ICE restarted on the ${kind} connection (${change})`;
  return change;
};

function nodeEvent(e) {
  switch (e.type) {
    case "active_talkers":
      demo.talkers = e.talkers;
      demo.slots = Object.fromEntries(e.slots.map((s) => [s.mid, s.participant]));
      demo.sources = Object.fromEntries(e.slots.filter((s) => s.source).map((s) => [s.mid, s.source]));
      break;
    case "dominant_speaker": demo.dominant = e.participant; break;
    case "bandwidth_alert": demo.numberOfVideos = e.number_of_videos; break;
    // The seeds' didStreamingNotification: everyone knows the session is live (and why it stopped).
    case "streaming": demo.streamingEvents.push({ state: e.state, reason: e.reason }); demo.live = e.state === "on"; break;
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
  renderScreenShare();
  // Until the node's first bandwidth_alert, the videos allowed are the video slots it fills (a screen share
  // counts, as it does in the node's number_of_videos).
  const filled = Object.entries(demo.slots).filter(([mid, who]) => who && demo.kinds[mid] === "video").length
    + (demo.screenSlot.participant ? 1 : 0);
  $("#videos").textContent = demo.numberOfVideos ?? filled;
}

function showRoster(room) {
  demo.roster = room;
  for (const p of room.participants) demo.names[p.participant] = p.name || p.participant;
  const raised = room.floor.raised_hands, approved = room.floor.approved_hands;
  const waiting = (room.awaited_participants || []).map((a) => a.name || a.participant);
  // The seeds' roomRecordOn / roomRecordOff: everyone sees that the session is recorded.
  demo.recording = room.recording || null;
  $("#room-state").textContent = [room.recording && room.recording.state === "recording" && "recording",
    room.streaming && room.streaming.live && "live", room.locked && "locked", room.hard_muted && "room muted", `pins: ${room.pinned.map(nameOf).join(", ") || "none"}`,
    waiting.length && `waiting to enter: ${waiting.join(", ")}`]
    .filter(Boolean).join(" · ");
  const list = $("#roster");
  list.innerHTML = "";
  for (const p of room.participants) {
    const li = document.createElement("li");
    const badges = [p.role === "moderator" && "moderator", p.publishes.screen && "sharing screen",
      p.hard_muted.audio && "audio muted", p.hard_muted.video && "video muted",
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
  "approve-all": () => demo.command("approve"),
  "deny-all": () => demo.command("deny"),
  "record-start": () => demo.command("record", { state: "start" }),
  "record-stop": () => demo.command("record", { state: "stop" }),
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
  "share-screen": () => (screenShare.sending ? stopScreenShare() : startScreenShare()),
};

document.addEventListener("click", (e) => {
  const action = e.target.dataset && e.target.dataset.action;
  if (action && actions[action]) actions[action](e.target.dataset.target);
});

$("#talker-count").addEventListener("change", (e) => {
  demo.setTalkers(Number(e.target.value)).catch((error) => { $("#last-result").textContent = error.message; });
});

// Received packets per slot and the total bitrate, from the receiving connection's stats. A slot's mid can
// have more than one inbound-rtp entry: packets the node sent on a slot just before it learnt the slot was
// removed reach Chromium as an unsignalled stream, which it files under a remaining mid. So they add up.
let lastBytes = 0, lastTime = 0;
async function readStats() {
  if (!subscribePC) return;
  let bytes = 0;
  const audioPackets = {}, videoFrames = {}, packets = {};
  const add = (counts, mid, n) => { counts[mid] = (counts[mid] || 0) + (n || 0); };
  const stats = await subscribePC.getStats();
  stats.forEach((s) => {
    if (s.type !== "inbound-rtp") return;
    const talkerSlot = s.mid in demo.kinds, screenSlot = !!s.mid && s.mid === demo.screenSlot.mid;
    if (talkerSlot || screenSlot) bytes += s.bytesReceived || 0;  // live slots only
    if (!talkerSlot) return;  // the screen slot's counts are readScreenSlotStats'
    add(packets, s.mid, s.packetsReceived);
    if (s.kind === "audio") add(audioPackets, s.mid, s.packetsReceived);
    else add(videoFrames, s.mid, s.framesDecoded);
  });
  Object.assign(demo, { audioPackets, videoFrames, packets });
  readScreenSlotStats(stats);
  readScreenShareSize();
  const now = performance.now();
  if (lastTime) demo.bitrateKbps = Math.max(0, Math.round(((bytes - lastBytes) * 8) / (now - lastTime)));
  lastBytes = bytes;
  lastTime = now;
  $("#bitrate").textContent = demo.bitrateKbps;
}

$("#join").addEventListener("submit", (e) => {
  e.preventDefault();
  connect(Object.fromEntries(new FormData(e.target)));
});

// ?room=demo&name=Alice&moderator_key=...&mode=lecture&knock=1&autojoin=1 joins at once (used by the browser test). The
// role is the signaling server's to give: the moderator key it was started with makes a moderator.
const params = new URLSearchParams(location.search);
for (const key of ["room", "name", "moderator_key", "mode"]) if (params.has(key)) $(`#join [name=${key}]`).value = params.get(key);
if (params.get("knock") === "1") $("#join [name=knock]").checked = true;
if (params.get("autojoin") === "1") connect(Object.fromEntries(new FormData($("#join"))));
