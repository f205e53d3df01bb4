import Foundation
import NodeIO
import SFU
import WebRTCEdge

/// One configuration key, defined once: its name as written in the file (`section.key`), what it means, how
/// a value is checked and stored, and how the current value is written back. `NodeConfiguration.table` lists
/// every key; parsing (file, environment, `--set`), `sfu config --keys`, the printed file and
/// docs/configuration.md all come from it.
public struct ConfigKey: Sendable {
    public let name: String
    public let help: String
    /// What a valid value looks like, for errors and the docs ("a whole number 1-12").
    public let expected: String
    public let current: @Sendable (NodeConfiguration) -> ConfigValue
    /// Stores the value, or returns false when it is not one `expected` allows.
    let store: @Sendable (inout NodeConfiguration, ConfigValue) -> Bool
    /// What of a secret value may be printed (`sfu config`): nil for a key that holds no secret.
    var redacted: (@Sendable (ConfigValue) -> ConfigValue)? = nil

    /// The key holds a secret as a whole (a bearer key): printed as how long it is, never what it is.
    func secret() -> ConfigKey {
        var k = self
        k.redacted = { v in
            guard case .string(let s) = v, !s.isEmpty else { return v }
            return .string("(set: \(s.count) characters; sfu config --show-secrets prints it)")
        }
        return k
    }

    /// The key is a URL whose password is a secret (`postgres://user:password@host/db`): printed without it.
    func secretPassword() -> ConfigKey {
        var k = self
        k.redacted = { v in
            guard case .string(let s) = v, var c = URLComponents(string: s), c.password != nil else { return v }
            c.password = "(hidden)"
            return .string(c.string ?? "(a URL with a password)")
        }
        return k
    }

    /// The file's section ("" for top-level keys) and the key within it.
    public var section: Substring { name.firstIndex(of: ".").map { name[..<$0] } ?? "" }
    public var leaf: Substring { name.firstIndex(of: ".").map { name[name.index(after: $0)...] } ?? name[...] }

    static func int(_ name: String, _ range: ClosedRange<Int>, _ path: WritableKeyPath<NodeConfiguration, Int> & Sendable,
                    _ help: String) -> ConfigKey {
        ConfigKey(name: name, help: help, expected: "a whole number \(range.lowerBound)-\(range.upperBound)",
                  current: { .int($0[keyPath: path]) },
                  store: { c, v in
                      guard case .int(let i) = v, range.contains(i) else { return false }
                      c[keyPath: path] = i
                      return true
                  })
    }

    /// A whole number shown and set in one unit and stored in another (seconds as an interval, percent as a share).
    static func scaled(_ name: String, _ range: ClosedRange<Int>, _ help: String, get: @escaping @Sendable (NodeConfiguration) -> Int,
                       set: @escaping @Sendable (inout NodeConfiguration, Int) -> Void) -> ConfigKey {
        ConfigKey(name: name, help: help, expected: "a whole number \(range.lowerBound)-\(range.upperBound)",
                  current: { .int(get($0)) },
                  store: { c, v in
                      guard case .int(let i) = v, range.contains(i) else { return false }
                      set(&c, i)
                      return true
                  })
    }

    static func bool(_ name: String, _ path: WritableKeyPath<NodeConfiguration, Bool> & Sendable, _ help: String) -> ConfigKey {
        ConfigKey(name: name, help: help, expected: "true or false", current: { .bool($0[keyPath: path]) },
                  store: { c, v in
                      guard case .bool(let b) = v else { return false }
                      c[keyPath: path] = b
                      return true
                  })
    }

    static func string(_ name: String, _ path: WritableKeyPath<NodeConfiguration, String> & Sendable, _ help: String) -> ConfigKey {
        ConfigKey(name: name, help: help, expected: "a string", current: { .string($0[keyPath: path]) },
                  store: { c, v in
                      guard case .string(let s) = v else { return false }
                      c[keyPath: path] = s
                      return true
                  })
    }

    static func choice(_ name: String, _ options: [String], _ path: WritableKeyPath<NodeConfiguration, String> & Sendable,
                       _ help: String) -> ConfigKey {
        let list = options.dropLast().joined(separator: ", ") + " or " + options.last!
        return ConfigKey(name: name, help: help, expected: list, current: { .string($0[keyPath: path]) },
                         store: { c, v in
                             guard case .string(let s) = v, options.contains(s) else { return false }
                             c[keyPath: path] = s
                             return true
                         })
    }

    /// A key whose value names one case of `T` (its raw value).
    static func oneOf<T: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, _ path: WritableKeyPath<NodeConfiguration, T> & Sendable, _ help: String
    ) -> ConfigKey where T.RawValue == String {
        let names = T.allCases.map(\.rawValue)
        let list = names.dropLast().joined(separator: ", ") + " or " + names.last!
        return ConfigKey(name: name, help: help, expected: list, current: { .string($0[keyPath: path].rawValue) },
                         store: { c, v in
                             guard case .string(let s) = v, let value = T(rawValue: s) else { return false }
                             c[keyPath: path] = value
                             return true
                         })
    }

    static func address(_ name: String, _ path: WritableKeyPath<NodeConfiguration, TransportAddress> & Sendable,
                        _ help: String) -> ConfigKey {
        ConfigKey(name: name, help: help, expected: "an address like \"127.0.0.1:8080\"",
                  current: { .string($0[keyPath: path].description) },
                  store: { c, v in
                      guard case .string(let s) = v, let a = TransportAddress(s) else { return false }
                      c[keyPath: path] = a
                      return true
                  })
    }

    /// One address, or a list of one per address family (dual stack: an IPv4 and an IPv6 address): the first
    /// goes to `first`, the other to `also`. Written back as a string when there is one.
    static func addresses(_ name: String, _ first: WritableKeyPath<NodeConfiguration, TransportAddress> & Sendable,
                          _ also: WritableKeyPath<NodeConfiguration, [TransportAddress]> & Sendable, _ help: String) -> ConfigKey {
        ConfigKey(name: name, help: help,
                  expected: "an address like \"127.0.0.1:8080\", or a list of one IPv4 and one IPv6 address like [\"127.0.0.1:8080\", \"[::1]:8080\"]",
                  current: { c in
                      let all = [c[keyPath: first]] + c[keyPath: also]
                      return all.count == 1 ? .string(all[0].description) : .array(all.map { .string($0.description) })
                  },
                  store: { c, v in
                      var all: [TransportAddress] = []
                      switch v {
                      case .string(let s): all = TransportAddress(s).map { [$0] } ?? []
                      case .array(let items):
                          for item in items {
                              guard case .string(let s) = item, let a = TransportAddress(s) else { return false }
                              all.append(a)
                          }
                      default: return false
                      }
                      guard (1...2).contains(all.count), Set(all.map(\.family)).count == all.count else { return false }
                      c[keyPath: first] = all[0]
                      c[keyPath: also] = Array(all.dropFirst())
                      return true
                  })
    }

    /// A list of strings, each passing `valid`.
    static func list(_ name: String, of what: String, _ path: WritableKeyPath<NodeConfiguration, [String]> & Sendable,
                     _ help: String, valid: @escaping @Sendable (String) -> Bool) -> ConfigKey {
        ConfigKey(name: name, help: help, expected: "a list of \(what)", current: { .array($0[keyPath: path].map(ConfigValue.string)) },
                  store: { c, v in
                      guard case .array(let items) = v else { return false }
                      var out: [String] = []
                      for item in items {
                          guard case .string(let s) = item, valid(s) else { return false }
                          out.append(s)
                      }
                      c[keyPath: path] = out
                      return true
                  })
    }
}
