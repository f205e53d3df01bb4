/// Iterates the elements of an RTP header extension block in place (RFC 8285).
///
/// One-byte form (profile 0xBEDE, section 4.2): ID 1-14 in the high nibble, length-1 in the low nibble;
/// ID 0 is padding; ID 15 stops processing. Two-byte form (profile 0x100X, section 4.3): ID byte, length
/// byte (0-255); ID 0 is padding. Any other profile is not RFC 8285 and yields no elements.
public struct RTPHeaderExtensions: Sequence {
    let packet: UnsafeRawBufferPointer
    let profile: UInt16
    let range: Range<Int>

    public struct Element {
        public var id: UInt8
        /// Range of the element's data within the packet.
        public var range: Range<Int>
    }

    public var isOneByte: Bool { profile == 0xBEDE }
    public var isTwoByte: Bool { profile & 0xFFF0 == 0x1000 }

    public func makeIterator() -> Iterator { Iterator(owner: self, offset: range.lowerBound) }

    public struct Iterator: IteratorProtocol {
        let owner: RTPHeaderExtensions
        var offset: Int

        public mutating func next() -> Element? {
            let p = owner.packet
            let end = owner.range.upperBound
            if owner.isOneByte {
                while offset < end {
                    let b = p[offset]
                    if b == 0 { offset += 1; continue }  // padding
                    let id = b >> 4
                    if id == 15 { offset = end; return nil }  // reserved: stop (section 4.2)
                    let len = Int(b & 0x0F) + 1
                    let start = offset + 1
                    guard start + len <= end else { offset = end; return nil }
                    offset = start + len
                    return Element(id: id, range: start..<(start + len))
                }
                return nil
            } else if owner.isTwoByte {
                while offset < end {
                    let id = p[offset]
                    if id == 0 { offset += 1; continue }
                    guard offset + 2 <= end else { offset = end; return nil }
                    let len = Int(p[offset + 1])
                    let start = offset + 2
                    guard start + len <= end else { offset = end; return nil }
                    offset = start + len
                    return Element(id: id, range: start..<(start + len))
                }
                return nil
            }
            return nil
        }
    }

    /// The data range of the first element with `id`, if present.
    public func find(_ id: UInt8) -> Range<Int>? {
        guard id != 0 else { return nil }
        for e in self where e.id == id { return e.range }
        return nil
    }
}
