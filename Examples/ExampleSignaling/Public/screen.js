// Screen share on the demo page.
// Sharing: the display capture goes out as a second video transceiver on the publishing connection (the same
// transport, renegotiated), and the offer names its mid in `screen_share_mids`: a display stream's id is
// random, so only this page knows which m-line is the screen.
// Receiving: the receiving connection has one screen slot, a recvonly video m-line named the same way, where
// the node shows the room's screen share whoever talks (and never a camera). It plays in a large tile labelled
// with the presenter the slot map names.
// Loaded before app.js; uses its `demo`, `negotiate`, connections and helpers only when called.
"use strict";

const screenShare = {
  sending: null,  // the publishing connection's transceiver that carries this page's share, while it shares
  slot: null,     // the receiving connection's screen slot (a transceiver), from the first subscribe offer on
};

function canShareScreen() {
  return !!(navigator.mediaDevices && navigator.mediaDevices.getDisplayMedia);
}

// The mids an offer on connection `kind` names in screen_share_mids (known once the offer is set locally).
function screenShareMids(kind) {
  const t = kind === "publish" ? screenShare.sending : screenShare.slot;
  return t && t.mid ? [t.mid] : [];
}

async function startScreenShare() {
  if (screenShare.sending || !publishPC) return;
  if (!canShareScreen()) return screenShareFailed("this browser cannot share a screen (no getDisplayMedia)");
  let stream;
  try {
    stream = await navigator.mediaDevices.getDisplayMedia({ video: { frameRate: { ideal: 15 } }, audio: false });
  } catch (error) {
    return screenShareFailed(error.name === "NotAllowedError" ? "screen share cancelled" : error.message);
  }
  const track = stream.getVideoTracks()[0];
  // Slides and code must stay legible: when bandwidth is short the encoder drops frames, not resolution.
  track.contentHint = "detail";
  // The browser's own "Stop sharing" control ends the track; the page stops the share the same way as its button.
  track.onended = () => stopScreenShare();
  $("#local-screen").srcObject = stream;
  try {
    await negotiate("publish", (pc) => {
      screenShare.sending = pc.addTransceiver(track, { direction: "sendonly", streams: [stream] });
    });
  } catch (error) {
    // The node refused the offer and the page rolled it back: nothing was ever sent on this transceiver.
    if (screenShare.sending) screenShare.sending.stop();
    screenShare.sending = null;
    track.stop();
    $("#local-screen").srcObject = null;
    return screenShareFailed(error.message);
  }
  if (!screenShare.sending) return;  // stopped while the offer was under way
  Object.assign(demo.screenShare, { sharing: true, error: null });
  render();
}

// Stopping renegotiates rather than just ending the track: the stopped transceiver's m-line is rejected in the
// next offer, so the node drops the share at once, empties everyone's screen slot and the room state stops
// listing it. An ended track alone would leave a published share that the node only finds stale after two
// silent seconds, which it cannot tell from a network hiccup.
async function stopScreenShare() {
  const t = screenShare.sending;
  if (!t) return;
  screenShare.sending = null;
  const track = t.sender.track;
  if (track) {
    track.onended = null;
    track.stop();  // ends the capture (and the browser's sharing indicator); the transceiver's stop does not
  }
  $("#local-screen").srcObject = null;
  Object.assign(demo.screenShare, { sharing: false, width: null, height: null });
  render();
  await negotiate("publish", () => t.stop());
}

function screenShareFailed(message) {
  demo.screenShare.error = message;
  $("#last-result").textContent = message;
}

// The size of the frames this page captures and shares, from its own preview (a track's settings can give
// the size asked for before the first frame comes).
function readScreenShareSize() {
  const preview = $("#local-screen");
  const sharing = demo.screenShare.sharing && preview.videoWidth > 0;
  Object.assign(demo.screenShare, { width: sharing ? preview.videoWidth : null, height: sharing ? preview.videoHeight : null });
}

// The receiving connection's screen slot, added with the first subscribe offer and kept by every later one.
function addScreenSlot(pc) {
  if (!screenShare.slot) screenShare.slot = pc.addTransceiver("video", { direction: "recvonly" });
}

function playScreenSlot(track) {
  demo.screenSlot.mid = screenShare.slot.mid;
  $("#screen-slot video").srcObject = new MediaStream([track]);
}

// Who the slot map puts in the screen slot, and the tile and button that follow from it.
function renderScreenShare() {
  const mid = screenShare.slot && screenShare.slot.mid;
  const presenter = (mid && demo.slots[mid]) || null;
  Object.assign(demo.screenSlot, { participant: presenter, source: (mid && demo.sources[mid]) || null });
  const tile = $("#screen-slot");
  tile.hidden = !presenter;
  tile.dataset.participant = presenter || "";
  tile.querySelector(".label").textContent = presenter ? `${nameOf(presenter)}'s screen` : "";
  $("#self-screen").hidden = !demo.screenShare.sharing;
  const button = $("#share-screen");
  button.textContent = demo.screenShare.sharing ? "Stop sharing" : "Share screen";
  button.disabled = !canShareScreen();
  button.title = canShareScreen() ? "" : "this browser cannot share a screen";
}

// Packets, decoded frames, frame size, key frames and picture loss requests (a decoder that had to start
// again) and freezes (a frame shown much later than the recent ones) in the screen slot, from getStats. Like
// the talker slots, its mid may have more than one inbound-rtp entry (see readStats); all but the packet and
// frame counts are those of the entry that decoded the most.
function readScreenSlotStats(stats) {
  let packets = 0, frames = 0, main = null;
  stats.forEach((s) => {
    if (s.type !== "inbound-rtp" || !s.mid || s.mid !== demo.screenSlot.mid) return;
    packets += s.packetsReceived || 0;
    frames += s.framesDecoded || 0;
    if (!main || (s.framesDecoded || 0) > (main.framesDecoded || 0)) main = s;
  });
  const field = (name) => (main && name in main ? main[name] : null);  // null: not received, or not in this browser's stats
  Object.assign(demo.screenSlot, { packets, frames, frameWidth: field("frameWidth"), frameHeight: field("frameHeight"),
    keyFrames: field("keyFramesDecoded"), pictureLossRequests: field("pliCount"),
    freezes: field("freezeCount"), freezeSeconds: field("totalFreezesDuration") });
}
