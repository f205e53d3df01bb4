import Testing
@testable import SFU
@testable import SFUBase

/// `Moderation` and `Roster` alone, without a room: what each command refuses, and the version a room that
/// spans nodes compares (every change moves it, a refusal does not).
@Suite struct ModerationStateTests {
    func code(_ body: () throws -> Void) -> Int? {
        do { try body(); return nil } catch let e as RoomError { return e.code.rawValue } catch { return -1 }
    }

    func person(_ index: Int, _ role: Role = .participant) -> Participant {
        Participant(id: "p\(index)", index: index, name: "p\(index)", role: role, talkerCount: nil)
    }

    @Test func everyChangeMovesTheVersionAndARefusalChangesNothing() throws {
        var m = Moderation()
        try m.setLocked(true)
        #expect(m.version == 1 && m.locked)
        let before = m
        #expect(code { try m.setLocked(true) } == ResultCode.roomAlreadyLocked.rawValue)
        #expect(m == before)
        try m.setRoomAudioMuted(true)
        #expect(code { try m.setRoomAudioMuted(true) } == ResultCode.roomAlreadyMuted.rawValue)
        try m.setRoomAudioMuted(false)
        #expect(code { try m.setRoomAudioMuted(false) } == ResultCode.roomAlreadyUnmuted.rawValue)
        #expect(m.version == 3 && !m.roomAudioMuted && m.rules(mode: .group).roomAudioMuted == false)
    }

    @Test func pinsLeaveOnePlaceForWhoeverSpeaks() throws {
        var m = Moderation()
        try m.pin([1, 2], maxActiveTalkers: 4)
        try m.pin([2, 3], maxActiveTalkers: 4)  // a pin twice is one pin
        #expect(m.pins == [1, 2, 3])
        let before = m
        #expect(code { try m.pin([4], maxActiveTalkers: 4) } == ResultCode.pinLimitReached.rawValue)
        #expect(m == before)
        #expect(code { try m.checkPins(fit: 3) } == ResultCode.pinLimitReached.rawValue)
        #expect(code { try m.checkPins(fit: 4) } == nil)
        m.unpin([2])
        #expect(m.pins == [1, 3])
    }

    @Test func aParticipantWhoLeavesLosesItsPinAndItsPlaceOnTheFloor() throws {
        var m = Moderation()
        let moderator = person(0, .moderator), a = person(1), b = person(2)
        try m.pin([1], maxActiveTalkers: 3)
        _ = try m.floor(.request, caller: a, target: nil, targetID: nil)
        _ = try m.floor(.request, caller: b, target: nil, targetID: nil)
        let holders = try m.floor(.grant, caller: moderator, target: a, targetID: a.id)
        #expect(holders.before == nil && holders.after == 1 && m.floor.raised == [2])
        #expect(m.forget(1) && m.pins.isEmpty && m.floor.holder == nil)
        #expect(!m.forget(2) && m.floor.raised.isEmpty)
        #expect(m.rules(mode: .lecture).floorHolder == nil)
    }

    @Test func aFloorCommandTheProtocolRefusesLeavesTheStateAsItWas() throws {
        var m = Moderation()
        let a = person(1)
        let before = m
        #expect(code { _ = try m.floor(.grant, caller: a, target: a, targetID: a.id) } == ResultCode.grantFloorUnauthorized.rawValue)
        #expect(code { _ = try m.floor(.finish, caller: a, target: nil, targetID: nil) } == ResultCode.floorRequestPending.rawValue)
        #expect(m == before)
    }

    @Test func theRosterRefusesWhatAdmissionMayNotTakeAndNeverReusesAnIndex() throws {
        var r = Roster(capacity: 2)
        let a = try r.admit("a", name: nil, role: .participant, talkerCount: nil, locked: false, roomName: "r")
        #expect(code { _ = try r.admit("a", name: nil, role: .participant, talkerCount: nil, locked: false, roomName: "r") }
                == ResultCode.participantExists.rawValue)
        #expect(code { _ = try r.admit("", name: nil, role: .participant, talkerCount: nil, locked: false, roomName: "r") }
                == ResultCode.invalidSetting.rawValue)
        #expect(code { _ = try r.admit("b", name: nil, role: .participant, talkerCount: nil, locked: true, roomName: "r") }
                == ResultCode.roomLocked.rawValue)
        #expect(code { _ = try r.admit("b", name: nil, role: .participant, talkerCount: 13, locked: false, roomName: "r") }
                == ResultCode.invalidSetting.rawValue)
        let b = try r.admit("b", name: "Bea", role: .moderator, talkerCount: 2, locked: false, roomName: "r")
        #expect(code { _ = try r.admit("c", name: nil, role: .participant, talkerCount: nil, locked: false, roomName: "r") }
                == ResultCode.limitReached.rawValue)
        #expect(try r.resolve(["b", "a"]) == [b.index, a.index])
        #expect(code { _ = try r.resolve(["a", "x"]) } == ResultCode.undefinedClientIDs.rawValue)
        #expect(code { _ = try r.resolve([]) } == ResultCode.undefinedClientIDs.rawValue)
        r.remove(a)
        let c = try r.admit("a", name: nil, role: .participant, talkerCount: nil, locked: false, roomName: "r")
        #expect(c.index == 2 && r.inOrder.map(\.id) == ["b", "a"] && r.lookup("b")?.name == "Bea")
    }
}
