import Foundation
import HTTPTypes
import Hummingbird
import SFUNode
import Testing

/// `docs/openapi.yaml` is what integrators read: every documented operation must exist, and every route the
/// node serves must be documented.
@Suite(.serialized, .timeLimit(.minutes(1))) struct OpenAPIDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// (METHOD, path with {params}) from the document's `paths`.
    static func documented() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var out = Set<String>(), path: String?, inPaths = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            if inPaths, !line.hasPrefix(" "), !line.isEmpty { inPaths = false }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") { path = String(line.dropFirst(2).dropLast()) }
            for m in ["get", "post", "patch", "delete"] where line == "    \(m):" { out.insert("\(m.uppercased()) \(path!)") }
        }
        return out
    }

    /// (METHOD, path) from the router's source, with `:param` written as `{param}` (`:p` is `{participant}`).
    static func served() throws -> Set<String> {
        let dir = root.appendingPathComponent("Sources/SFUNode/API")
        var out = Set<String>()
        for file in try FileManager.default.contentsOfDirectory(atPath: dir.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            let regex = /router\.(get|post|patch|delete|ws)\("([^"]+)"\)/
            for m in text.matches(of: regex) {
                let method = m.output.1 == "ws" ? "GET" : m.output.1.uppercased()
                var path = String(m.output.2).replacingOccurrences(of: "\\(kind)", with: "{kind}")
                path = path.replacingOccurrences(of: ":p", with: "{participant}").replacingOccurrences(of: ":room", with: "{room}")
                if path.contains("{kind}") {
                    for k in ["publish", "subscribe"] { out.insert("\(method) \(path.replacingOccurrences(of: "{kind}", with: k))") }
                } else {
                    out.insert("\(method) \(path)")
                }
            }
        }
        return out
    }

    @Test func everyRouteIsDocumentedAndEveryDocumentedOperationIsServed() throws {
        let documented = try Self.documented(), served = try Self.served()
        #expect(served.count >= 20, "the source scan found the routes: \(served.sorted())")
        #expect(served.subtracting(documented).isEmpty, "served but not documented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")
    }

    /// Every flow mapping and sequence (`{ ... }`, `[ ... ]`, one line each in this document) is closed on its
    /// line, strings aside: an unclosed one makes the whole document unreadable to YAML parsers (schemathesis
    /// refused it once), which the route scan above would not notice.
    @Test func everyFlowCollectionClosesOnItsLine() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var open: [Int] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var depth = (brace: 0, bracket: 0), inString = false, escaped = false
            for ch in line {
                if inString {
                    if escaped { escaped = false } else if ch == "\\" { escaped = true } else if ch == "\"" { inString = false }
                    continue
                }
                switch ch {
                case "\"": inString = true
                case "{": depth.brace += 1
                case "}": depth.brace -= 1
                case "[": depth.bracket += 1
                case "]": depth.bracket -= 1
                default: break
                }
            }
            if depth.brace != 0 || depth.bracket != 0 { open.append(n + 1) }
        }
        #expect(open.isEmpty, "lines with an unclosed flow collection: \(open)")
    }

    @Test func everyDocumentedOperationAnswersThroughTheRouterRatherThanNoSuchRoute() async throws {
        var c = NodeConfiguration()
        c.workers = 1
        c.mediaListen = .init("127.0.0.1:0")!
        let node = try Node(configuration: c)
        node.start()
        defer { node.stop() }
        let app = Application(router: ControlAPI.router(node: node))
        let operations = try Self.documented().sorted()
        let codes: [Int?] = try await app.test(.router) { client in
            var out: [Int?] = []
            for op in operations {
                let parts = op.split(separator: " ")
                let uri = String(parts[1]).replacingOccurrences(of: "{room}", with: "r").replacingOccurrences(of: "{participant}", with: "p")
                let r = try await client.execute(uri: uri, method: HTTPRequest.Method(String(parts[0]))!, body: ByteBuffer(string: "{}"))
                out.append((try? JSONSerialization.jsonObject(with: Data(r.body.readableBytesView))) .flatMap { ($0 as? [String: Any])?["result"] as? Int })
            }
            return out
        }
        for (op, code) in zip(operations, codes) { #expect(code != 6011, "\(op) is documented but not routed") }
    }
}
