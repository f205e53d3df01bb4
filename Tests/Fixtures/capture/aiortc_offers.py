import asyncio, sys
from aiortc import RTCPeerConnection, RTCConfiguration
from aiortc.mediastreams import AudioStreamTrack, VideoStreamTrack

async def publish():
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    pc.addTransceiver(AudioStreamTrack(), direction="sendonly")
    pc.addTransceiver(VideoStreamTrack(), direction="sendonly")
    await pc.setLocalDescription(await pc.createOffer())
    sdp = pc.localDescription.sdp
    await pc.close()
    return sdp

async def subscribe():
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    for _ in range(3): pc.addTransceiver("audio", direction="recvonly")
    for _ in range(2): pc.addTransceiver("video", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    sdp = pc.localDescription.sdp
    await pc.close()
    return sdp

async def main():
    open("aiortc-publish.sdp", "w").write(await publish())
    open("aiortc-subscribe.sdp", "w").write(await subscribe())
asyncio.run(main())
