import Testing
@testable import LoadGen

/// The conversation model says what its parameters say: over two hours of seeded meeting, the measured means
/// and shares land within a stated tolerance of the parameters that produced them.
@Suite struct ConversationModelTests {
    static var long: ConversationParameters {
        var p = ConversationParameters()
        p.participants = 6
        p.silentShare = 0
        p.minutes = 120
        p.talkspurtMeanSeconds = 1.0
        p.talkspurtMinSeconds = 0.2
        p.pauseMeanSeconds = 0.6
        p.spurtsPerTurnMean = 3
        p.overlapShare = 0.3
        p.interruptionShare = 0.05
        p.backchannelsPerMinute = 6
        p.seed = 42
        return p
    }

    static let clips = [[15, 25, 30], [20, 35]]

    @Test func talkspurtAndPauseMeansMatchTheirParametersOverALongRun() {
        let s = ConversationStatistics(ConversationModel.generate(Self.long, voices: 2, backchannelFrames: Self.clips))
        // About 5,000 talkspurts and 3,000 pauses: a 1.0 s exponential mean has a standard error near 1.2 %,
        // a 0.6 s one near 1.8 %; 6 % is over three of them, and interruptions shorten a few spurts.
        #expect(s.talkspurts > 3000)
        #expect(abs(s.meanTalkspurtSeconds - 1.0) < 0.06, "mean talkspurt \(s.meanTalkspurtSeconds) s")
        #expect(abs(s.meanPauseSeconds - 0.6) < 0.6 * 0.06, "mean pause \(s.meanPauseSeconds) s")
    }

    @Test func overlapAndInterruptionSharesMatchTheirParameters() {
        let s = ConversationStatistics(ConversationModel.generate(Self.long, voices: 2, backchannelFrames: Self.clips))
        // About 1,500 turn changes: the standard error of a 30 % share is 1.2 points; 4 points is over three.
        #expect(s.turns > 1000)
        #expect(abs(s.overlapShare - 0.3) < 0.04, "overlap share \(s.overlapShare)")
        #expect(abs(s.interruptionShare - 0.05) < 0.02, "interruption share \(s.interruptionShare)")
        #expect(s.doubleTalkShare > 0)
    }

    @Test func withoutOverlapsNoTwoTurnsShareAFrame() {
        var p = Self.long
        p.overlapShare = 0
        p.interruptionShare = 0
        p.backchannelsPerMinute = 0
        let s = ConversationStatistics(ConversationModel.generate(p, voices: 2, backchannelFrames: Self.clips))
        #expect(s.overlapShare == 0)
        #expect(s.doubleTalkShare == 0)
    }

    @Test func backchannelsComeFromListenersAndAreShortClipsPlayedWhole() {
        let script = ConversationModel.generate(Self.long, voices: 2, backchannelFrames: Self.clips)
        let s = ConversationStatistics(script)
        // 6 a minute for 120 minutes, less those that would have fallen on the person's own speech.
        #expect((400...720).contains(s.backchannels), "\(s.backchannels) backchannels")
        for (i, person) in script.participants.enumerated() {
            for u in person.utterances {
                guard case .backchannel(let clip) = u.kind else { continue }
                #expect(u.count == Self.clips[person.voice][clip])
                let holder = script.turns.last { $0.start <= u.start }
                #expect(holder?.speaker != i, "the floor holder backchannelled itself")
            }
        }
    }

    @Test func silentParticipantsNeverSpeakAndListenOnlyOnesPublishNothing() {
        var p = Self.long
        p.participants = 10
        p.silentShare = 0.7
        p.silentListenOnly = true
        p.minutes = 30
        let script = ConversationModel.generate(p, voices: 2, backchannelFrames: Self.clips)
        #expect(script.talkers == 3)
        #expect(script.participants.filter(\.publishesAudio).count == 3)
        #expect(script.participants[3...].allSatisfy { $0.utterances.isEmpty })
    }

    @Test func theSameSeedGivesTheSameMeetingAndAnotherSeedAnother() {
        var p = Self.long
        p.minutes = 10
        let a = ConversationModel.generate(p, voices: 2, backchannelFrames: Self.clips)
        let b = ConversationModel.generate(p, voices: 2, backchannelFrames: Self.clips)
        p.seed = 43
        let c = ConversationModel.generate(p, voices: 2, backchannelFrames: Self.clips)
        #expect(a.turns == b.turns)
        #expect(a.participants.map(\.utterances) == b.participants.map(\.utterances))
        #expect(a.turns != c.turns)
    }

    @Test func aPersonsUtterancesNeverOverlapOneAnother() {
        let script = ConversationModel.generate(Self.long, voices: 2, backchannelFrames: Self.clips)
        for person in script.participants {
            for (a, b) in zip(person.utterances, person.utterances.dropFirst()) {
                #expect(a.end <= b.start, "\(person.id): \(a) overlaps \(b)")
            }
        }
    }
}
