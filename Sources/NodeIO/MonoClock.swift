import Glibc
import SFUBase

/// The caller-side clock of the I/O shell: CLOCK_MONOTONIC (the engine itself never reads a clock).
public enum MonoClock {
    public static func now() -> MonoTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonoTime(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}
