import SFUMedia
import SFUSimulation

/// What every simulated participant says and when, on a grid of 20 ms frames (one Opus packet each): the
/// model's intentions, against which the listener metrics compare what subscribers actually received.
public struct ConversationScript: Sendable {
    public var frames: Int
    public var participants: [Person]
    public var turns: [Turn]

    public struct Person: Sendable {
        public var id: String
        /// Which synthetic voice speaks for this person (an index into the media's voices).
        public var voice: Int
        /// Microphone gain in 3 dB steps (-2 = -6 dB).
        public var gainStep: Int
        public var noiseDbov: Double
        /// Publishes audio at all (a listen-only listener does not).
        public var publishesAudio: Bool
        /// In time order, never overlapping one another.
        public var utterances: [Utterance]
    }

    public struct Utterance: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// A talkspurt of turn `turn`, spoken from `offset` frames into the voice's speech.
            case spurt(turn: Int, offset: Int)
            /// A short acknowledgement, clip `clip` of the voice's, played whole.
            case backchannel(clip: Int)
        }

        public var start: Int
        public var count: Int
        public var kind: Kind
        public var end: Int { start + count }

        public var isBackchannel: Bool {
            if case .backchannel = kind { return true }
            return false
        }

        public init(start: Int, count: Int, kind: Kind) {
            self.start = start
            self.count = count
            self.kind = kind
        }
    }

    /// One hold of the floor: talkspurts of one speaker separated by pauses.
    public struct Turn: Sendable, Equatable {
        public var speaker: Int
        /// First and one-past-last frame of its speech.
        public var start: Int
        public var end: Int
        /// The turn began by cutting into the previous one mid-turn.
        public var interrupted: Bool
        public init(speaker: Int, start: Int, end: Int, interrupted: Bool) {
            self.speaker = speaker
            self.start = start
            self.end = end
            self.interrupted = interrupted
        }
    }

    /// Participants who say anything at all.
    public var talkers: Int { participants.filter { !$0.utterances.isEmpty }.count }
}

extension ConversationScript {
    /// The participants who publish audio (by index), in the seeded random order in which they join. A room
    /// fills talker lists with its earliest joiners until someone speaks, and the model numbers its talkers
    /// first: joining in index order would put the talkers in every initial list and hide their first onsets.
    /// `sfu tune` and `sfu bench` join in this order, so they start from the same lists.
    public func joinOrder(seed: UInt64) -> [Int] {
        var rng = SplitMix64(seed: seed &+ 0x101)
        return Array(participants.indices).shuffled(using: &rng).filter { participants[$0].publishesAudio }
    }
}
