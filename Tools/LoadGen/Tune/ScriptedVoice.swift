/// What one scripted participant's microphone sends at each 20 ms frame: the encoded frame of its current
/// utterance, or of its room noise between utterances, with the RFC 6464 level of the same PCM.
///
/// Shared by `sfu tune`'s publishers on virtual time (`ScriptedPublisher`) and `sfu bench`'s UDP publishers,
/// so that both play exactly the same meeting and their listener metrics can be compared.
struct ScriptedVoice {
    let person: ConversationScript.Person
    let sound: ConversationMedia.Encoded
    private var cursor = 0

    init(person: ConversationScript.Person, sound: ConversationMedia.Encoded) {
        self.person = person
        self.sound = sound
    }

    /// The frame to send at `f` (frames asked in increasing order), and its level.
    mutating func audio(at f: Int) -> (payload: [UInt8], level: UInt8) {
        let u = person.utterances
        while cursor < u.count, u[cursor].end <= f { cursor += 1 }
        if cursor < u.count, u[cursor].start <= f {
            let into = f - u[cursor].start
            switch u[cursor].kind {
            case .spurt(_, let offset):
                let i = (offset + into) % sound.speech.count
                return (sound.speech[i], sound.speechLevels[i])
            case .backchannel(let clip):
                let i = min(into, sound.clips[clip].count - 1)
                return (sound.clips[clip][i], sound.clipLevels[clip][i])
            }
        }
        return noise(at: f)
    }

    /// The room noise alone (what it sends before the meeting starts, too).
    func noise(at f: Int) -> (payload: [UInt8], level: UInt8) {
        let i = ((f % sound.noise.count) + sound.noise.count) % sound.noise.count
        return (sound.noise[i], sound.noiseLevels[i])
    }
}
