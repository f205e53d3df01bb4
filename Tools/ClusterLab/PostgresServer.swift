import Foundation

/// A private PostgreSQL server for the registry tests and `sfu registry-bench`: Debian's binaries (`scripts/install-deps.sh --tests`
/// installs them), a fresh cluster in a temporary directory, listening only on a Unix socket there (no TCP
/// port to collide with), started once per test process and stopped when it exits. Each test makes its own
/// database. As root (CI), the server runs as the `postgres` user: PostgreSQL refuses to run as root.
public final class PostgresServer: Sendable {
    public static let shared: Result<PostgresServer, PostgresServerError> = Result { try PostgresServer() }
        .mapError { $0 as? PostgresServerError ?? PostgresServerError(why: "\($0)") }

    let directory: String
    let bin: String
    let asPostgres: Bool

    public struct PostgresServerError: Error, CustomStringConvertible {
        var why: String
        public var description: String { "a private PostgreSQL server: \(why)" }
    }

    private init() throws {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let version = versions.compactMap(Int.init).max() else {
            throw PostgresServerError(why: "no /usr/lib/postgresql/*/bin: install Debian's postgresql (scripts/install-deps.sh --tests)")
        }
        bin = "/usr/lib/postgresql/\(version)/bin"
        // In /tmp, not $TMPDIR: as root the server runs as `postgres`, which must be able to reach the directory.
        directory = "/tmp/sfu-registry-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        asPostgres = geteuid() == 0
        if asPostgres { try Self.run("/bin/chown", ["postgres:postgres", directory]) }
        try Self.run(bin + "/initdb", ["-D", directory + "/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"], asPostgres: asPostgres)
        try Self.run(bin + "/pg_ctl", ["-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "60", "start",
                                       "-o", "-k \(directory) -c listen_addresses= -p 5432 -c fsync=off -c max_connections=200"],
                     asPostgres: asPostgres)
        Self.stopAtExit = (bin, directory, asPostgres)
        atexit {
            guard let (bin, dir, asPostgres) = PostgresServer.stopAtExit else { return }
            try? PostgresServer.run(bin + "/pg_ctl", ["-D", dir + "/data", "-m", "immediate", "-w", "stop"], asPostgres: asPostgres)
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    nonisolated(unsafe) static var stopAtExit: (String, String, Bool)?

    /// A new, empty database and the registry URL that reaches it.
    public func database() throws -> String {
        let name = "t\(UInt64.random(in: 0...UInt64.max))"
        try Self.run(bin + "/createdb", ["-h", directory, "-p", "5432", "-U", "postgres", name], asPostgres: asPostgres)
        return "postgres://postgres@/\(name)?host=\(directory)&port=5432"
    }

    /// Runs SQL in a database as the superuser (to age a heartbeat, as a test needs to).
    public func psql(_ url: String, _ sql: String) throws {
        let name = String(URLComponents(string: url)!.path.dropFirst())
        try Self.run(bin + "/psql", ["-h", directory, "-p", "5432", "-U", "postgres", "-d", name, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql],
                     asPostgres: asPostgres)
    }

    /// Runs a program to its end (posix_spawn and waitpid: no run loop needed, so it also works from a
    /// static initializer on any thread). Its errors go to a file, not a pipe: `pg_ctl start` leaves the
    /// server running with the descriptor inherited, and a pipe would never reach its end.
    static func run(_ path: String, _ arguments: [String], asPostgres: Bool = false) throws {
        let argv = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", path] + arguments : [path] + arguments
        let errors = "/tmp/sfu-pg-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).err"
        defer { unlink(errors) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for a in cArgs { free(a) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArgs, environ)
        guard spawned == 0 else { throw PostgresServerError(why: "cannot start \(argv[0]): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let exited = status & 0x7f == 0, code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            let message = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw PostgresServerError(why: "\((path as NSString).lastPathComponent) ended with status \(status): \(message)")
        }
    }
}
