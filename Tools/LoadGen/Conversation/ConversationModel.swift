import Foundation
import SFUMedia
import SFUSimulation

/// Writes a meeting's `ConversationScript` from its parameters: seeded, so the same parameters give the same
/// meeting, frame for frame.
///
/// The floor passes from turn to turn. A turn is a run of talkspurts by one speaker separated by pauses, both
/// exponential as in Brady's on-off model (1969); the number of spurts is geometric. At a turn's end the next
/// speaker (by talkativeness, or the host with `hostShare`) starts after a short gap, or before the current one
/// stops (an overlap), or cuts into the middle of the turn (an interruption: the current speaker goes on for the
/// overlap, then stops). Backchannels come as a Poisson process over the whole meeting, each from someone
/// other than the floor holder, never over that person's own speech.
public enum ConversationModel {
    /// `backchannelFrames[v]` are the lengths, in frames, of voice `v`'s acknowledgement clips.
    public static func generate(_ p: ConversationParameters, voices: Int, backchannelFrames: [[Int]]) -> ConversationScript {
        var rng = Random(seed: p.seed)
        let total = p.frames
        let speakers = p.speakers
        var people: [ConversationScript.Person] = (0..<p.participants).map { i in
            let steps = Int(p.gainSpreadDb / 3)
            let gain = steps == 0 ? 0 : Int(rng.below(2 * steps + 1)) - steps
            let noisy = rng.uniform() < p.noisyShare
            return ConversationScript.Person(
                id: "p\(i + 1)", voice: i % max(1, voices), gainStep: gain, noiseDbov: noisy ? p.noisyDbov : p.noiseDbov,
                publishesAudio: i < speakers || !p.silentListenOnly, utterances: [])
        }
        let weights = (0..<speakers).map { 1 / pow(Double($0 + 1), p.talkativenessSkew) }
        var lastEnd = [Int](repeating: -1, count: speakers)
        var turns: [ConversationScript.Turn] = []
        var t = Int((p.leadInSeconds / ConversationParameters.frameSeconds).rounded())
        var holder = rng.pick(weights: weights, excluding: [])
        var interrupted = false
        while t < total {
            t = max(t, lastEnd[holder] + 1)
            guard t < total else { break }
            let mean = holder == 0 && p.hostShare > 0 ? p.hostSpurtsPerTurnMean : p.spurtsPerTurnMean
            let n = rng.geometric(mean: mean)
            var spurts: [(start: Int, count: Int)] = []
            var s = t
            for j in 0..<n {
                let d = frames(p.talkspurtMinSeconds) + frames(rng.exponential(mean: p.talkspurtMeanSeconds - p.talkspurtMinSeconds), atLeast: 0)
                spurts.append((s, d))
                s += d
                if j < n - 1 { s += frames(rng.exponential(mean: p.pauseMeanSeconds)) }
            }
            let next = nextHolder(after: holder, p, weights: weights, rng: &rng)
            let overlap = frames(rng.exponential(mean: p.overlapMeanSeconds))
            let r = rng.uniform()
            var nextStart: Int
            var nextInterrupted = false
            let last = spurts[spurts.count - 1]
            if next != holder, r < p.interruptionShare, let j = spurts.indices.filter({ spurts[$0].count >= 2 }).randomElement(using: &rng) {
                let cut = spurts[j].start + 1 + Int(rng.below(spurts[j].count - 1))
                let stop = min(cut + overlap, spurts[j].start + spurts[j].count)
                spurts = Array(spurts[0..<j]) + [(spurts[j].start, stop - spurts[j].start)]
                nextStart = cut
                nextInterrupted = true
            } else if next != holder, r < p.overlapShare {
                nextStart = max(last.start + 1, last.start + last.count - overlap)
            } else {
                nextStart = last.start + last.count + frames(rng.exponential(mean: p.gapMeanSeconds))
            }
            let kept = spurts.compactMap { sp -> (start: Int, count: Int)? in
                sp.start < total ? (sp.start, min(sp.count, total - sp.start)) : nil
            }
            let turn = turns.count
            for sp in kept {
                people[holder].utterances.append(.init(start: sp.start, count: sp.count, kind: .spurt(turn: turn, offset: Int(rng.below(1 << 20)))))
            }
            turns.append(.init(speaker: holder, start: kept[0].start, end: kept[kept.count - 1].start + kept[kept.count - 1].count,
                               interrupted: interrupted))
            lastEnd[holder] = turns[turns.count - 1].end
            holder = next
            interrupted = nextInterrupted
            t = nextStart
        }
        addBackchannels(to: &people, turns: turns, p, total: total, backchannelFrames: backchannelFrames, rng: &rng)
        return ConversationScript(frames: total, participants: people, turns: turns)
    }

    static func nextHolder(after current: Int, _ p: ConversationParameters, weights: [Double], rng: inout Random) -> Int {
        guard weights.count > 1 else { return current }
        if p.hostShare > 0 {
            if current != 0, rng.uniform() < p.hostShare { return 0 }
            let others = weights.indices.filter { $0 != 0 && $0 != current }
            guard !others.isEmpty else { return current == 0 ? 1 : 0 }
            return others[rng.pick(weights: others.map { weights[$0] }, excluding: [])]
        }
        return rng.pick(weights: weights, excluding: [current])
    }

    /// Acknowledgements as a Poisson process in the room, from speakers other than the floor holder.
    static func addBackchannels(to people: inout [ConversationScript.Person], turns: [ConversationScript.Turn],
                                _ p: ConversationParameters, total: Int, backchannelFrames: [[Int]], rng: inout Random) {
        let speakers = p.speakers
        guard p.backchannelsPerMinute > 0, speakers > 1, !turns.isEmpty else { return }
        var t = Double(turns[0].start) * ConversationParameters.frameSeconds
        while true {
            t += rng.exponential(mean: 60 / p.backchannelsPerMinute)
            let f = Int((t / ConversationParameters.frameSeconds).rounded())
            guard f < total else { break }
            let holder = turns.last { $0.start <= f }?.speaker ?? -1
            let who = Int(rng.below(speakers))
            guard who != holder else { continue }
            let clips = backchannelFrames[people[who].voice % backchannelFrames.count]
            guard !clips.isEmpty else { continue }
            let clip = Int(rng.below(clips.count))
            let u = ConversationScript.Utterance(start: f, count: min(clips[clip], total - f), kind: .backchannel(clip: clip))
            // A margin of five frames keeps it apart from this person's own talkspurts.
            guard !people[who].utterances.contains(where: { $0.start < u.end + 5 && u.start < $0.end + 5 }) else { continue }
            people[who].utterances.append(u)
        }
        for i in people.indices { people[i].utterances.sort { $0.start < $1.start } }
    }

    static func frames(_ seconds: Double, atLeast minimum: Int = 1) -> Int {
        max(minimum, Int((seconds / ConversationParameters.frameSeconds).rounded()))
    }
}

/// The model's random numbers: SplitMix64 with the draws it needs.
struct Random: RandomNumberGenerator {
    private var base: SplitMix64
    init(seed: UInt64) { base = SplitMix64(seed: seed) }
    mutating func next() -> UInt64 { base.next() }

    /// Uniform in [0, 1).
    mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
    mutating func exponential(mean: Double) -> Double { -mean * log(1 - uniform()) }

    /// At least one; mean `mean`.
    mutating func geometric(mean: Double) -> Int {
        guard mean > 1 else { return 1 }
        return 1 + Int(log(1 - uniform()) / log(1 - 1 / mean))
    }

    /// An index drawn by weight, never one of `excluding` (unless nothing else is left).
    mutating func pick(weights: [Double], excluding: Set<Int>) -> Int {
        let allowed = weights.indices.filter { !excluding.contains($0) }
        guard !allowed.isEmpty else { return excluding.first ?? 0 }
        let sum = allowed.reduce(0) { $0 + weights[$1] }
        var x = uniform() * sum
        for i in allowed {
            x -= weights[i]
            if x < 0 { return i }
        }
        return allowed[allowed.count - 1]
    }
}
