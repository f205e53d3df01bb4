/// Who talks in a room: the dominant speaker detector fed with every publisher's levels, the recency order
/// (front = most recently elected or started holding the floor), and for each speaker when its current
/// talkspurt began and whether it has lasted long enough to count as holding the floor. Pure state on the
/// caller's clock; the room asks it for candidates' speaking flags and applies what a decision changes.
struct TalkerElection {
    var detector: DominantSpeakerDetector
    /// Recency order R: front = most recently elected or started speaking; joiners at the end.
    private(set) var recency: [Int] = []
    /// When each speaker's current talkspurt began (the detector said speaking), and whether it has lasted
    /// long enough (or won dominance) to count as holding the floor.
    private var talkspurts: [Int: (since: MonoTime, holdsFloor: Bool)] = [:]

    init(detector: DominantSpeakerDetector.Configuration, now: MonoTime) {
        self.detector = DominantSpeakerDetector(configuration: detector, now: now)
    }

    var dominant: Int? { detector.dominant }

    mutating func join(_ i: Int) { recency.append(i) }

    mutating func leave(_ i: Int) {
        recency.removeAll { $0 == i }
        talkspurts[i] = nil
    }

    func isSpeaking(_ i: Int) -> Bool { detector.isSpeaking(i) }

    /// Speaking, but only just (a "yeah", a cough, a laugh): not the dominant speaker and not yet holding the
    /// floor. Heard at once, but it comes after those who hold the floor and takes a video only when nobody
    /// else would.
    func isYoung(_ i: Int) -> Bool {
        detector.isSpeaking(i) && detector.dominant != i && talkspurts[i].map { !$0.holdsFloor } ?? false
    }

    /// The outcome of a decision: who became dominant (nil: nobody new), and whether talker lists changed.
    struct Outcome {
        var newDominant: Int?
        var listsChanged = false
    }

    /// Runs what the detector has due, then applies it. Recency moves on dominance and on sustained speech,
    /// not on every start: a "yeah" must not put its speaker ahead of the one who holds the floor (issue 13).
    mutating func decideIfDue(sustainedSpeech: MonoTime.Interval, now: MonoTime) -> Outcome? {
        guard let d = detector.decideIfDue(now: now) else { return nil }
        var outcome = Outcome(newDominant: d.newDominant)
        for change in d.speakingChanges {
            talkspurts[change.id] = change.speaking ? (now, false) : nil
        }
        if let newDominant = d.newDominant { moveToFront(newDominant) }
        // In id order, so that two who reach the floor in one decision are ordered the same on every run.
        for id in talkspurts.keys.sorted() {
            guard let spurt = talkspurts[id], !spurt.holdsFloor,
                  now - spurt.since >= sustainedSpeech || detector.dominant == id else { continue }
            talkspurts[id]?.holdsFloor = true
            if detector.dominant != id { moveToFront(id) }
            outcome.listsChanged = true
        }
        if d.newDominant != nil || !d.speakingChanges.isEmpty { outcome.listsChanged = true }
        return outcome
    }

    private mutating func moveToFront(_ i: Int) {
        recency.removeAll { $0 == i }
        recency.insert(i, at: 0)
    }
}
