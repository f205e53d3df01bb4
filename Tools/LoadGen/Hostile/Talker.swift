import SFUMedia

/// A publisher client with its media: Opus speech (or near silence) every 20 ms, VP8 at 15 fps when it
/// publishes video, starting again from the keyframe when the node asks for one.
final class Talker {
    let client: LoadClient
    let media: MediaLibrary
    var loud: Bool
    private var frame = 0
    private var videoFrame = 0
    /// One packetizer per simulcast layer (each layer is a stream of its own).
    private var packetizers = [VP8Packetizer(pictureID: UInt16.random(in: 0...0x7FFF))]

    init(_ client: LoadClient, media: MediaLibrary, loud: Bool = true) {
        self.client = client
        self.media = media
        self.loud = loud
    }

    /// One 20 ms tick: an audio frame, and a video frame on 3 ticks of 10.
    func tick() {
        let f = frame
        frame += 1
        if client.profile.publishAudio {
            if loud {
                client.sendAudio(media.speech[f % media.speech.count], level: media.speechLevels[f % media.speechLevels.count])
            } else {
                client.sendAudio(media.silence[f % media.silence.count], level: 127)
            }
        }
        guard client.profile.publishVideo, f == 0 || (f * 3) / 10 != ((f - 1) * 3) / 10 else { return }
        if client.keyframeRequested {
            client.keyframeRequested = false
            videoFrame = 0
        }
        let v = media.video[videoFrame % media.video.count]
        videoFrame += 1
        // A simulcast publisher sends the same frames on every layer: what the node forwards is a stream.
        let layers = max(1, client.profile.simulcastLayers)
        while packetizers.count < layers { packetizers.append(VP8Packetizer(pictureID: UInt16.random(in: 0...0x7FFF))) }
        for layer in 0..<layers {
            client.sendVideo(packetizers[layer].packetize(v), samples: UInt32(90_000 / media.fps), layer: layer)
        }
    }
}
