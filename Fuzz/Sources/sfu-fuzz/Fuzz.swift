import Foundation
import SFUFuzzTargets

// libFuzzer's driver, linked from libclang_rt.fuzzer_no_main (SwiftPM owns `main`, so the fuzzer is
// started from here).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

nonisolated(unsafe) var selected = FuzzTarget.rtp

/// `SFU_FUZZ_TARGET` picks the entry point (`FuzzTarget`: rtp, rtcp, vp8, h264, vp9, opus, stun, sdp, room, edge,
/// session); `SFU_FUZZ_SEEDS=dir` writes the target's seed inputs into `dir` and exits. Every other argument
/// is libFuzzer's.
@_cdecl("sfu_fuzz_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    let env = ProcessInfo.processInfo.environment
    guard let target = FuzzTarget(rawValue: env["SFU_FUZZ_TARGET"] ?? "") else {
        print("set SFU_FUZZ_TARGET to one of: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
        return 2
    }
    selected = target
    if let dir = env["SFU_FUZZ_SEEDS"] {
        for (i, seed) in target.seeds.enumerated() {
            FileManager.default.createFile(atPath: "\(dir)/seed-\(i)", contents: Data(seed))
        }
        return 0
    }
    var c = argc
    var v = argv
    return LLVMFuzzerRunDriver(&c, &v) { data, size in
        selected.run(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
}
