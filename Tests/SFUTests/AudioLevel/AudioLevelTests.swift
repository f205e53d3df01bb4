import Foundation
import SFUMedia
import SFUSimulation
import Testing
@testable import SFU
@testable import SFUBase

@Suite struct LevelMathTests {
    func level(_ s: [Int16]) -> UInt8 { s.withUnsafeBufferPointer { LevelMath.level(of: $0) } }

    // media-core.md section 1 checks.
    @Test func fullScaleSquareWaveIsZero() {
        #expect(level((0..<960).map { $0 % 20 < 10 ? 32767 : -32768 }) == 0)
    }

    @Test func digitalSilenceIs127() { #expect(level([Int16](repeating: 0, count: 960)) == 127) }

    @Test func minus20DbfsSineIs23() { #expect(level(TestSignal.sine(dbfs: -20, seconds: 0.02)) == 23) }
}

@Suite struct LevelMeterTests {
    static let speech = try! Speech.say("The quick brown fox jumps over the lazy dog near the river bank.")

    func opusInfo(_ p: [UInt8]) -> OpusPacketInfo { p.withUnsafeBytes { OpusPacketInfo.parse($0) }.successValue! }

    @Test func decodedLevelFollowsTheSignalLevel() throws {
        // What the server hears at 16 kHz agrees with the PCM level of the voiced frames it came from.
        let encoder = OpusFrameEncoder()
        var meter = LevelMeter(source: .decode)
        var diffs: [Double] = []
        for (i, packet) in encoder.encodeAll(Self.speech).enumerated() {
            let pcm = Array(Self.speech[(i * 960)..<((i + 1) * 960)])
            let truth = pcm.withUnsafeBufferPointer { LevelMath.level(of: $0) }
            let measured = packet.withUnsafeBytes { meter.measure(claimed: nil, opus: opusInfo(packet), payload: $0) }.level
            if i > 5, truth < 40, let measured { diffs.append(abs(Double(measured) - Double(truth))) }
        }
        #expect(diffs.count > 20)
        let mean = diffs.reduce(0, +) / Double(diffs.count)
        #expect(mean < 4, "mean |decoded - true| over voiced frames: \(mean) dB")
    }

    @Test func silkVADGatesDecodingOfSilence() throws {
        let encoder = OpusFrameEncoder()
        var meter = LevelMeter(source: .decode)
        let quiet = TestSignal.noise(dbfs: -75, seconds: 1)
        for packet in encoder.encodeAll(quiet) {
            let l = packet.withUnsafeBytes { meter.measure(claimed: nil, opus: opusInfo(packet), payload: $0) }.level
            #expect(l != nil)
        }
        #expect(meter.gatedPackets > 25, "gated \(meter.gatedPackets) of 50, decoded \(meter.decodedPackets)")
    }

    @Test func extensionModeTakesTheClaimAndNeverDecodesWhenPresent() throws {
        let encoder = OpusFrameEncoder()
        var meter = LevelMeter(source: .extension)
        for packet in encoder.encodeAll(Array(Self.speech.prefix(48_000))) {
            let l = packet.withUnsafeBytes {
                meter.measure(claimed: AudioLevelExtension(voiceActivity: true, level: 33), opus: opusInfo(packet), payload: $0)
            }.level
            #expect(l == 33 || opusInfo(packet).isDTX)
        }
        #expect(meter.decodedPackets == 0)
    }

    @Test func verifyModeFlagsAClientThatLiesAboutItsLevel() throws {
        // The client claims loud speech (10 dBov) while sending near silence; an honest one claims the truth.
        let encoder = OpusFrameEncoder()
        var liar = LevelMeter(source: .verify)
        var honest = LevelMeter(source: .verify)
        let quiet = TestSignal.noise(dbfs: -60, seconds: 20)
        var liarVerdicts: [LevelMeter.Verdict] = []
        var honestVerdicts: [LevelMeter.Verdict] = []
        for (i, packet) in encoder.encodeAll(quiet).enumerated() {
            let truth = quiet[(i * 960)..<((i + 1) * 960)].withUnsafeBufferPointer { LevelMath.level(of: $0) }
            packet.withUnsafeBytes { p in
                if let v = liar.measure(claimed: .init(voiceActivity: true, level: 10), opus: opusInfo(packet), payload: p).verdict { liarVerdicts.append(v) }
                if let v = honest.measure(claimed: .init(voiceActivity: false, level: truth), opus: opusInfo(packet), payload: p).verdict { honestVerdicts.append(v) }
            }
        }
        #expect(!liarVerdicts.isEmpty && liarVerdicts.allSatisfy { $0.meanDifference > 30 })
        #expect(!honestVerdicts.isEmpty && honestVerdicts.allSatisfy { $0.meanDifference < 12 }, "\(honestVerdicts)")
        #expect(honest.decodedPackets < 1000 / 5, "an honest client costs a sample, not every packet")
        #expect(liarVerdicts.count >= 50, "a claim of speech over packets whose voice flag says none is checked every time")
    }
}
