import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The node's control API as the load generator calls it: JSON in, JSON out, the status kept.
public struct ControlClient: Sendable {
    public let base: URL
    public let key: String?

    public init(base: URL, key: String? = nil) {
        self.base = base
        self.key = key
    }

    public struct Reply: @unchecked Sendable {
        public var status: Int
        public var json: [String: Any]
        public var result: Int? { json["result"] as? Int }
    }

    @discardableResult
    public func call(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Reply {
        var request = URLRequest(url: base.appendingPathComponent(path))
        request.httpMethod = method
        request.timeoutInterval = 10
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        if let body { request.httpBody = try JSONSerialization.data(withJSONObject: body) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return Reply(status: status, json: json)
    }

    /// Calls and insists on success.
    @discardableResult
    public func require(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Reply {
        let r = try await call(method, path, body)
        guard (200..<300).contains(r.status) else { throw LoadError("\(method) \(path): \(r.status) \(r.json)") }
        return r
    }

    /// The text of `/metrics`.
    public func metrics() async throws -> String {
        var request = URLRequest(url: base.appendingPathComponent("metrics"))
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        let (data, _) = try await URLSession.shared.data(for: request)
        return String(decoding: data, as: UTF8.self)
    }
}

/// What Linux says about a process: resident memory and CPU time (from /proc).
public enum ProcessProbe {
    /// Resident set size in bytes (`VmRSS`).
    public static func residentBytes(pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").compactMap { Int($0) }.first.map { $0 * 1024 }
    }

    /// User plus system CPU seconds (`/proc/<pid>/stat` fields 14 and 15).
    public static func cpuSeconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
