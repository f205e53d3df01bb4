import CNodeIO
import Foundation
import Synchronization

/// A program the node runs beside itself (the live streams' FFmpeg), started clean: an empty signal mask and
/// every signal at its default action, only the three descriptors it is given, a process group of its own
/// (`sfu_spawn`). Foundation's `Process` on Linux starts its child with the spawning thread's signal mask -
/// a libdispatch or Swift concurrency thread blocks SIGTERM - and with the node's ignored signals still
/// ignored (ServiceLifecycle ignores SIGTERM to catch it with a signal source), so a child it starts cannot
/// be stopped but by SIGKILL (issue 40).
///
/// A thread of its own waits for the exit. The exit is noticed without reaping (`waitid` with `WNOWAIT`) and
/// reaped under the same lock `signal` takes, so a signal never reaches another process that got the pid.
public final class ChildProcess: Sendable {
    public enum Exit: Sendable, Equatable, CustomStringConvertible {
        case status(Int32)
        case signal(Int32)

        public var description: String {
            switch self {
            case .status(let s): "exited with status \(s)"
            case .signal(let s): "killed by signal \(s)"
            }
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var executable: String
        public var errno: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(errno)))" }

        public init(executable: String, errno: Int32) {
            self.executable = executable
            self.errno = errno
        }
    }

    public let pid: Int32
    private let exit_ = Mutex<Exit?>(nil)

    /// Starts `executable` with `arguments` and `environment` ("NAME=value"); its standard input, output and
    /// error on the given descriptors (nil: /dev/null). `onExit` is called once, on the waiting thread.
    public init(executable: String, arguments: [String], environment: [String], stdin: Int32? = nil, stdout: Int32? = nil,
                stderr: Int32? = nil, onExit: @escaping @Sendable (Exit) -> Void) throws(Failure) {
        let argv = Self.cStrings([executable] + arguments), envp = Self.cStrings(environment)
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        let r = sfu_spawn(executable, argv + [nil], envp + [nil], stdin ?? -1, stdout ?? -1, stderr ?? -1)
        guard r > 0 else { throw Failure(executable: executable, errno: -r) }
        pid = r
        let thread = Thread { [self] in
            _ = sfu_child_wait(pid)
            let exit = exit_.withLock { e -> Exit in
                var signaled: Int32 = 0, code: Int32 = 0
                let done: Exit = sfu_child_reap(pid, &signaled, &code) == 0 ? (signaled != 0 ? .signal(code) : .status(code)) : .status(-1)
                e = done
                return done
            }
            onExit(exit)
        }
        thread.name = "sfu-child-wait"
        thread.start()
    }

    /// How it ended; nil while it runs.
    public var exit: Exit? { exit_.withLock { $0 } }

    public var isRunning: Bool { exit == nil }

    /// Sends `signal` while it runs; false once it has exited (nothing is sent then).
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        exit_.withLock { e in e == nil && kill(pid, signal) == 0 }
    }

    /// The node's environment for a child, without the node's own settings (`SFU_*`: the API key, the
    /// registry's URL with its password), which a child has no use for.
    public static var inheritedEnvironment: [String] {
        ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SFU_") }.map { "\($0.key)=\($0.value)" }.sorted()
    }

    private static func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] { strings.map { strdup($0) } }
}
