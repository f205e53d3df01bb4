/// What a script actually contains, measured the way its parameters are defined: the figures a test compares
/// with the parameters, and the tuning report prints beside its results.
public struct ConversationStatistics: Sendable, Equatable {
    public var talkspurts = 0
    public var meanTalkspurtSeconds = 0.0
    /// Silences between two talkspurts of the same turn.
    public var pauses = 0
    public var meanPauseSeconds = 0.0
    public var turns = 0
    /// Turn changes (between different speakers) in which the next speaker started before the last stopped.
    public var overlapShare = 0.0
    public var interruptionShare = 0.0
    public var backchannels = 0
    /// Participants who say anything at all.
    public var talkers = 0
    /// Share of the meeting during which two or more people speak at once.
    public var doubleTalkShare = 0.0

    public init(_ s: ConversationScript) {
        let f = ConversationParameters.frameSeconds
        var spurtFrames = 0, pauseFrames = 0
        var active = [UInt8](repeating: 0, count: s.frames)
        for person in s.participants {
            var previous: (turn: Int, end: Int)?
            for u in person.utterances {
                for i in u.start..<min(u.end, s.frames) { active[i] &+= 1 }
                switch u.kind {
                case .backchannel:
                    backchannels += 1
                case .spurt(let turn, _):
                    talkspurts += 1
                    spurtFrames += u.count
                    if let previous, previous.turn == turn {
                        pauses += 1
                        pauseFrames += u.start - previous.end
                    }
                    previous = (turn, u.end)
                }
            }
        }
        meanTalkspurtSeconds = talkspurts > 0 ? Double(spurtFrames) * f / Double(talkspurts) : 0
        meanPauseSeconds = pauses > 0 ? Double(pauseFrames) * f / Double(pauses) : 0
        turns = s.turns.count
        let changes = zip(s.turns, s.turns.dropFirst()).filter { $0.speaker != $1.speaker }
        if !changes.isEmpty {
            overlapShare = Double(changes.filter { $1.start < $0.end }.count) / Double(changes.count)
            interruptionShare = Double(changes.filter { $1.interrupted }.count) / Double(changes.count)
        }
        talkers = s.talkers
        doubleTalkShare = s.frames > 0 ? Double(active.filter { $0 >= 2 }.count) / Double(s.frames) : 0
    }
}
