import SFU
import Testing

/// The NACK responder's bounds on their own (the hostile suite's NACK attack exercises them end to end).
@Suite struct ResendPolicyTests {
    let policy = ResendPolicy(maxResendsPerPacket: 3, minInterval: .milliseconds(20), kbps: 2000, shareOfEstimate: 0.5)
    let t0 = MonoTime.seconds(10)

    @Test(arguments: [
        // (resent so far, last resend ms before now or nil, reported rtt ms or nil, verdict)
        (0, nil, nil, ResendPolicy.Verdict.resend),
        (2, 500, 50, .resend),
        (3, 500, 50, .refused(.resendLimit)),  // a packet is resent at most 3 times however often it is NACKed
        (1, 30, 50, .tooSoon),  // within the round trip: the NACK crossed the resend in flight
        (1, 60, 50, .resend),
        (1, 90, nil, .tooSoon),  // no round trip known: 100 ms
        (1, 15, 1, .tooSoon),  // a client claiming a 1 ms round trip still waits 20 ms
        (1, 25, 1, .resend),
    ] as [(Int, Int64?, Int64?, ResendPolicy.Verdict)])
    func aPacketIsResentAFewTimesAndNeverFasterThanTheRoundTripOrTheFloor(_ resends: Int, _ agoMs: Int64?, _ rttMs: Int64?,
                                                                         _ verdict: ResendPolicy.Verdict) {
        let last = agoMs.map { MonoTime(nanoseconds: t0.nanoseconds - $0 * 1_000_000) }
        #expect(policy.admits(resends: resends, lastResend: last, rtt: rttMs.map { .milliseconds($0) }, now: t0) == verdict)
    }

    @Test func resendsCostAtMostTheCapAndHalfTheSubscribersEstimate() {
        #expect(policy.bytesPerSecond(estimate: nil) == 250_000)  // 2000 kbit/s
        #expect(policy.bytesPerSecond(estimate: 800_000) == 50_000)  // half of 800 kbit/s
        #expect(policy.bytesPerSecond(estimate: 100_000_000) == 250_000)
    }

    @Test func theBudgetRefillsAtItsRateAfterABurst() {
        var budget = TokenBucket()
        // 800 kbit/s estimate: 50 kB/s, burst 12.5 kB: ten 1200-byte packets at once, not eleven.
        let first = (0..<11).map { _ in policy.pay(1200, from: &budget, estimate: 800_000, now: t0) }
        #expect(first == Array(repeating: true, count: 10) + [false])
        #expect(!policy.pay(1200, from: &budget, estimate: 800_000, now: t0 + .milliseconds(10)), "10 ms refill 500 B")
        #expect(policy.pay(1200, from: &budget, estimate: 800_000, now: t0 + .milliseconds(40)), "40 ms refill 2 kB")
    }
}
