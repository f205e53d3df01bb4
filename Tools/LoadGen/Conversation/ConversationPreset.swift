/// Named meeting shapes to start from. Their numbers are this project's choices, made to differ where meetings
/// differ (who holds the floor, how long, how many never speak); the durations inside a turn keep the defaults
/// of `ConversationParameters`, which cite their sources. A scenario file or `--set` changes any of them.
public enum ConversationPreset: String, CaseIterable, Sendable {
    /// A daily stand-up: everyone speaks in turn, each for a few sentences, a chair now and then, few
    /// interruptions.
    case standup
    /// A working discussion: a quarter never speak, a few talk most, turns are short and often overlap.
    case discussion
    /// A lecture with questions: the lecturer talks for minutes, a handful of students ask short questions,
    /// everyone else is muted.
    case lecture
    /// A large webinar: a host and three panelists, two questions from a muted audience of a hundred.
    case webinar

    public var parameters: ConversationParameters {
        var p = ConversationParameters()
        switch self {
        case .standup:
            p.participants = 8
            p.minutes = 15
            p.silentShare = 0
            p.spurtsPerTurnMean = 8
            p.hostShare = 0.3
            p.hostSpurtsPerTurnMean = 2
            p.talkativenessSkew = 0
            p.overlapShare = 0.15
            p.interruptionShare = 0.03
            p.backchannelsPerMinute = 4
        case .discussion:
            p.participants = 12
            p.minutes = 30
            p.silentShare = 0.25
            p.spurtsPerTurnMean = 3
            p.hostShare = 0.15
            p.talkativenessSkew = 1
            p.overlapShare = 0.3
            p.interruptionShare = 0.08
            p.backchannelsPerMinute = 8
        case .lecture:
            p.participants = 30
            p.minutes = 45
            p.silentShare = 0.8
            p.silentListenOnly = true
            p.hostShare = 0.8
            p.hostSpurtsPerTurnMean = 150
            p.spurtsPerTurnMean = 3
            p.talkativenessSkew = 0.5
            p.overlapShare = 0.1
            p.interruptionShare = 0.02
            p.backchannelsPerMinute = 1
        case .webinar:
            p.participants = 100
            p.minutes = 60
            p.silentShare = 0.94
            p.silentListenOnly = true
            p.hostShare = 0.4
            p.hostSpurtsPerTurnMean = 8
            p.spurtsPerTurnMean = 10
            p.talkativenessSkew = 0.5
            p.overlapShare = 0.15
            p.interruptionShare = 0.03
            p.backchannelsPerMinute = 2
        }
        return p
    }
}
