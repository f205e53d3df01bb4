import SFU
import SFUMedia
import SFUSimulation
import WebRTCEdge

/// The `stun` target's structured half: one ICE-lite agent per input, fed a sequence of connectivity checks
/// that the target assembles from the input's fields (USERNAME halves, attributes, nomination, transaction
/// ID, role attributes, source address) and signs with real keys (MESSAGE-INTEGRITY, FINGERPRINT), mixed with
/// raw datagrams, replays of earlier checks, ICE restarts and consent ticks on virtual time.
///
/// Promises checked against a model kept beside the agent:
/// - a check is answered exactly when it is valid (right USERNAME, integrity with the current password,
///   fingerprint, agent not failed) and not a replay; a 487 answers a valid check that claims ICE-CONTROLLED;
/// - `selected` only ever changes to the source of a valid, nominating, answered check;
/// - a valid check whose transaction ID was answered before from another address (since the last restart,
///   among the last 64) is refused as a replay, and moves nothing;
/// - an address is validated only while a valid check from it is younger than the consent timeout;
/// - the state says how long the selected address (before a nomination, every address) has been quiet:
///   connected only while its consent is fresh, whatever other addresses check (see `checkConsent`).
struct FuzzICE {
    static let credentials = [
        ICECredentials(ufrag: "evtj", password: "VOkJxbRl1RmTxUk/WvJxBt"),
        ICECredentials(ufrag: "Ab12", password: "abcdefghijklmnopqrstuvwx"),
        ICECredentials(ufrag: "evtj2", password: "VOkJxbRl1RmTxUk/WvJxBu"),
        ICECredentials(ufrag: "zZ+/", password: "0123456789012345678901"),
    ]
    static let remoteUfrags = ["h6vY", "Zz99", "h6vY0", "x"]
    static let addresses = [
        TransportAddress(ip: .v4(0x0A00_0001), port: 5000), TransportAddress(ip: .v4(0x0A00_0001), port: 5001),
        TransportAddress(ip: .v4(0xC0A8_0102), port: 5000), TransportAddress(ip: .v6(0x2001_0DB8_0000_0000, 1), port: 443),
    ]
    /// Virtual-time steps a tick may take: around the 10 s disconnection and 30 s consent limits.
    static let steps: [Int64] = [0, 10, 500, 2_000, 5_000, 10_000, 20_000, 31_000]
    /// Attribute types the parser interprets: an extra one of these makes a check's validity the parser's
    /// call, not the model's.
    static let known: Set<UInt16> = [0x0001, 0x0006, 0x0008, 0x0009, 0x0020, 0x0024, 0x0025, 0x8028, 0x8029, 0x802A]

    /// A check as built: what decides its validity later (credentials may change under it).
    struct Built {
        var bytes: [UInt8]
        var username: String?
        var key: [UInt8]?
        var fingerprintOK: Bool
        var controlled: Bool
        var nominate: Bool
        /// An extra attribute the parser interprets, or a USERNAME that is not UTF-8: the model abstains.
        var undecided: Bool
        var transactionID: [UInt8]
    }

    let agent: ICELiteAgent
    var now = MonoTime.seconds(1000)
    var local = credentials[0]
    var remoteUfrag = remoteUfrags[0]
    var previous = credentials[1]
    var recent: [(id: [UInt8], from: TransportAddress)] = []
    var lastValid: [TransportAddress: MonoTime] = [:]
    var history: [Built] = []

    init() {
        agent = ICELiteAgent(local: Self.credentials[0], remoteUfrag: Self.remoteUfrags[0])
    }

    @discardableResult
    static func run(_ data: UnsafeRawBufferPointer) -> FuzzICE {
        var r = FuzzReader(data)
        var m = FuzzICE()
        var steps = 0
        while !r.isEmpty, steps < 256 {
            steps += 1
            m.step(&r)
        }
        return m
    }

    mutating func step(_ r: inout FuzzReader) {
        switch r.u8() % 8 {
        case 0, 1, 2: deliver(build(&r), from: Self.addresses[r.index(4)])
        case 3:
            guard !history.isEmpty else { return }
            deliver(history[r.index(history.count)], from: Self.addresses[r.index(4)])
        case 4:
            let raw = r.chunk(max: 600)
            raw.withUnsafeBytes { p in deliverRaw(p, from: Self.addresses[r.index(4)]) }
        case 5:
            previous = local
            local = Self.credentials[r.index(Self.credentials.count)]
            remoteUfrag = Self.remoteUfrags[r.index(Self.remoteUfrags.count)]
            agent.restart(local: local, remoteUfrag: remoteUfrag)
            recent.removeAll()
        default:
            now = now + .milliseconds(Self.steps[r.index(Self.steps.count)] + Int64(r.u8()))
            agent.tick(now: now)
            checkConsent()
        }
    }

    /// A Binding request from the input's fields.
    func build(_ r: inout FuzzReader) -> Built {
        let flags = r.u8(), variants = r.u8()
        let transactionID: [UInt8]
        if variants & 0x80 != 0 {
            let raw = r.bytes(12)
            transactionID = raw + [UInt8](repeating: 0, count: 12 - raw.count)
        } else {
            transactionID = [UInt8](repeating: 0x5A, count: 11) + [variants & 0x07]  // a small pool, so replays happen
        }
        var undecided = false
        let username: String?
        switch (variants >> 3) & 3 {
        case 0: username = "\(local.ufrag):\(remoteUfrag)"
        case 1: username = "\(previous.ufrag):\(remoteUfrag)"
        case 2: username = "\(local.ufrag):\(Self.remoteUfrags[r.index(Self.remoteUfrags.count)])"
        default:
            let raw = r.chunk(max: 80)
            let s = String(decoding: raw, as: UTF8.self)
            if Array(s.utf8) != raw { undecided = true }
            username = raw.isEmpty ? nil : s
        }
        let key: [UInt8]?
        switch (variants >> 5) & 3 {
        case 0: key = Array(local.password.utf8)
        case 1: key = Array(previous.password.utf8)
        case 2: key = Array(Self.credentials[r.index(Self.credentials.count)].password.utf8)
        default: key = nil
        }
        var b = STUNMessageBuilder(class: .request, transactionID: transactionID)
        if let username { b.add(STUNMessage.Attribute.username, Array(username.utf8)) }
        if flags & 0x08 != 0 { b.add(STUNMessage.Attribute.priority, u32: r.u32()) }
        // Tie-breakers from the input: a lite agent is always controlled, so no value may change its answer.
        if flags & 0x02 != 0 { b.add(STUNMessage.Attribute.iceControlling, u64: UInt64(r.u32()) << 32 | UInt64(r.u32())) }
        if flags & 0x04 != 0 { b.add(STUNMessage.Attribute.iceControlled, u64: UInt64(r.u32()) << 32 | UInt64(r.u32())) }
        if flags & 0x01 != 0 { b.add(STUNMessage.Attribute.useCandidate, []) }
        if flags & 0x10 != 0 {
            let type = r.u16()
            if Self.known.contains(type) { undecided = true }
            b.add(type, r.chunk(max: 64))
        }
        if let key { b.addMessageIntegrity(key: key) }
        if flags & 0x20 != 0 {  // comprehension-optional, after MI: ignored unless it is a FINGERPRINT
            let type = r.u16() | 0x8000
            if type == STUNMessage.Attribute.fingerprint { undecided = true }
            b.add(type, r.chunk(max: 32))
        }
        var fingerprintOK = true
        if flags & 0x40 == 0 {
            b.addFingerprint()
            if flags & 0x80 != 0 {
                var bytes = b.bytes
                bytes[bytes.count - 1] ^= 0x01
                return Built(bytes: bytes, username: username, key: key, fingerprintOK: false, controlled: flags & 0x04 != 0,
                             nominate: flags & 0x01 != 0, undecided: undecided, transactionID: transactionID)
            }
        } else {
            fingerprintOK = false
        }
        return Built(bytes: b.bytes, username: username, key: key, fingerprintOK: fingerprintOK, controlled: flags & 0x04 != 0,
                     nominate: flags & 0x01 != 0, undecided: undecided, transactionID: transactionID)
    }

    /// Whether the check authenticates against the agent's current credentials.
    func authenticates(_ c: Built) -> Bool {
        c.fingerprintOK && c.username == "\(local.ufrag):\(remoteUfrag)" && c.key == Array(local.password.utf8)
    }

    mutating func deliver(_ c: Built, from: TransportAddress) {
        if history.count < 16 { history.append(c) } else { history[Int(c.transactionID[11]) % 16] = c }
        defer { checkState() }
        let before = agent.selected
        let failedBefore = agent.state == .failed || agent.state == .closed
        let result = c.bytes.withUnsafeBytes { p -> Result<[UInt8], EdgeDropReason> in
            guard case .success(let m) = STUNMessage.parse(p) else { return .failure(.stunMalformed) }
            return agent.handle(m, p, from: from, now: now)
        }
        if c.undecided {
            if agent.selected != before { promise(agent.selected == from, "selection moved to \(String(describing: agent.selected)) by a check from \(from)") }
            let roleConflict = c.bytes.withUnsafeBytes { p in if case .success(let m) = STUNMessage.parse(p) { m.iceControlled != nil } else { true } }
            if case .success = result, !roleConflict { accepted(c.transactionID, from: from) }
            return
        }
        let valid = authenticates(c) && !failedBefore
        guard valid else {
            if case .success = result { promise(false, "an invalid check was answered (user \(c.username ?? "-"), fingerprint \(c.fingerprintOK))") }
            promise(agent.selected == before, "an invalid check moved the selection")
            return
        }
        if c.controlled {
            guard case .success(let bytes) = result else { promise(false, "a valid ICE-CONTROLLED check got no 487: \(result)"); return }
            let cls = bytes.withUnsafeBytes { p -> STUNMessage.Class? in if case .success(let m) = STUNMessage.parse(p) { m.messageClass } else { nil } }
            promise(cls == .error, "a role conflict was answered with \(String(describing: cls))")
            promise(agent.selected == before, "a role-conflicting check moved the selection")
            return
        }
        if let seen = recent.first(where: { $0.id == c.transactionID }), seen.from != from {
            promise(result == .failure(.stunReplay), "a transaction ID seen from \(seen.from) was accepted from \(from): \(result)")
            promise(agent.selected == before, "a replayed check moved the selection")
            return
        }
        guard case .success = result else { promise(false, "a valid fresh check was refused: \(result)"); return }
        accepted(c.transactionID, from: from)
        if c.nominate { promise(agent.selected == from, "a nomination from \(from) did not select it") }
        else { promise(agent.selected == before, "a check without USE-CANDIDATE moved the selection") }
        promise(agent.isValidated(from, now: now), "an answered check did not validate its address")
    }

    mutating func accepted(_ id: [UInt8], from: TransportAddress) {
        lastValid[from] = now
        if !recent.contains(where: { $0.id == id }) {
            recent.append((id, from))
            if recent.count > ICELiteAgent.rememberedChecks { recent.removeFirst() }
        }
    }

    /// Raw bytes: whatever they are, the selection moves only for a check that authenticates now.
    mutating func deliverRaw(_ p: UnsafeRawBufferPointer, from: TransportAddress) {
        guard case .success(let m) = STUNMessage.parse(p) else { return }
        defer { checkState() }
        let before = agent.selected
        let result = agent.handle(m, p, from: from, now: now)
        if agent.selected != before {
            promise(m.verifyIntegrity(p, key: Array(local.password.utf8)) && m.verifyFingerprint(p) && m.useCandidate,
                    "raw bytes moved the selection without a valid nomination")
        }
        if case .success = result, m.iceControlled == nil { accepted(m.transactionID, from: from) }
    }

    /// What the agent's state promises at any moment (`ICEState`): connected means a nominated address whose
    /// consent is fresh (a valid check on it within `disconnectedAfter`), whatever other addresses check.
    func checkState() {
        guard agent.state == .connected else { return }
        guard let s = agent.selected else { promise(false, "connected without a selected address"); return }
        let quiet = lastValid[s].map { now - $0 }
        promise(quiet.map { $0 < agent.disconnectedAfter } == true,
                "connected while the selected \(s) has been quiet \(quiet.map { "\($0.seconds) s" } ?? "forever")")
    }

    /// Consent (RFC 7675) after a tick: an address is validated only while its last valid check is younger
    /// than the consent timeout; the state says how long the selected address has been quiet (before a
    /// nomination: every address): connected under `disconnectedAfter`, disconnected from then to the consent
    /// timeout, failed after it; an agent nobody nominated stays new until then.
    func checkConsent() {
        for a in Self.addresses where agent.isValidated(a, now: now) {
            promise(lastValid[a].map { now - $0 < agent.consentTimeout } == true, "\(a) is validated without a recent valid check")
        }
        checkState()
        let last = agent.selected.map { lastValid[$0] } ?? lastValid.values.max()
        guard let t = last else {
            promise(agent.state == .new, "\(agent.state) before any valid check")
            return
        }
        let quiet = now - t
        switch agent.state {
        case .new:
            promise(agent.selected == nil && quiet < agent.consentTimeout, "still new after \(quiet.seconds) s without a check")
        case .connected: break  // checkState
        case .disconnected:
            promise(quiet >= agent.disconnectedAfter && quiet < agent.consentTimeout, "disconnected after \(quiet.seconds) s without a check")
        case .failed: promise(quiet >= agent.consentTimeout, "consent failed after only \(quiet.seconds) s without a check")
        case .closed: promise(false, "closed, but nothing closes this agent")
        }
    }

    /// Seeds: a valid nomination, a replay from another address, a restart, a tick past consent.
    static var seeds: [[UInt8]] {
        var w = FuzzWriter()
        w.u8(0x80)  // structured mode
        w.u8(0); w.u8(0x09); w.u8(0x01); w.u32(0x6E00_01FF); w.u8(0)  // nominate, priority, tid pool 1, address 0
        w.u8(3); w.u8(0); w.u8(2)  // replay history[0] from address 2
        w.u8(7); w.u8(3); w.u8(0)  // tick 2 s
        w.u8(5); w.u8(1); w.u8(1)  // restart with credentials 1
        w.u8(1); w.u8(0x03); w.u8(0x02); w.u32(0x0102_0304); w.u32(0x0506_0708); w.u8(1)  // nominate + controlling (tie-breaker), tid pool 2, address 1
        w.u8(7); w.u8(7); w.u8(0)  // tick 31 s: consent expires
        w.u8(0); w.u8(0x01); w.u8(0x03); w.u8(1)
        return [w.bytes]
    }
}
