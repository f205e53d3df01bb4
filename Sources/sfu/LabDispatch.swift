#if canImport(Glibc)
import Glibc
#endif

import NodeCommandLine

/// Hands a tool command to the `sfu-lab` binary in the same directory (execv: same process id, arguments,
/// environment and standard streams, so scripts that signal or wait for `sfu bench` keep working).
enum LabDispatch {
    /// The commands that live in sfu-lab (`LabTools`).
    static let tools = LabTools.names

    static func run(arguments: [String]) -> Never {
        let path = directoryOfThisExecutable() + "/sfu-lab"
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) }
        argv.append(nil)
        execv(path, &argv)
        let message = LabTools.missing(tool: arguments[0], labPath: path, reason: String(cString: strerror(errno)))
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(127)
    }

    /// The directory of /proc/self/exe (the real binary, whatever path or symlink started it).
    private static func directoryOfThisExecutable() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return "." }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }
}
