import CMediaFile
import SFUBase

/// One file written through libavformat (`CMediaFile`, the only place that calls the library): a container with
/// one stream. Chosen over GStreamer because one small C file covers the four codecs' muxers (Ogg, WebM,
/// Matroska) with a blocking write that suits a writer thread, and FFmpeg is what composes the files afterwards.
final class MediaFile {
    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var description: String
        /// ENOSPC or EDQUOT: the disk is full.
        var diskFull: Bool { code == -28 || code == -122 }

        init(_ code: Int32) {
            self.code = code
            var buffer = [CChar](repeating: 0, count: 128)
            sfu_media_error_string(code, &buffer, buffer.count)
            description = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    private var handle: OpaquePointer?
    let path: String

    /// The container for a codec: Ogg for Opus (RFC 7845), WebM for VP8 and VP9, Matroska for H.264.
    static func container(for codec: Codec) -> (format: String, fileExtension: String) {
        switch codec {
        case .opus: ("ogg", "opus")
        case .vp8, .vp9: ("webm", "webm")
        case .h264: ("matroska", "mkv")
        }
    }

    init(path: String, codec: Codec, extradata: [UInt8] = [], width: Int = 0, height: Int = 0, firstFrame: [UInt8] = []) throws {
        let c: Int32 = switch codec {
        case .opus: Int32(SFU_MEDIA_OPUS.rawValue)
        case .vp8: Int32(SFU_MEDIA_VP8.rawValue)
        case .vp9: Int32(SFU_MEDIA_VP9.rawValue)
        case .h264: Int32(SFU_MEDIA_H264.rawValue)
        }
        var error: Int32 = 0
        let h = extradata.withUnsafeBufferPointer { e in
            firstFrame.withUnsafeBufferPointer { f in
                sfu_media_file_open(path, Self.container(for: codec).format, c, Int32(codec.clockRate), e.baseAddress, e.count,
                                    Int32(width), Int32(height), f.baseAddress, f.count, &error)
            }
        }
        guard let h else { throw Failure(error) }
        handle = h
        self.path = path
    }

    deinit { _ = try? close() }

    /// One frame at `pts` (the codec's clock), lasting `duration` (0: unknown).
    func write(_ bytes: UnsafeRawBufferPointer, pts: Int64, duration: Int64, keyframe: Bool) throws {
        guard let handle else { return }
        let r = sfu_media_file_write(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, pts, duration,
                                     keyframe ? 1 : 0)
        if r < 0 { throw Failure(r) }
    }

    var bytesWritten: Int64 { handle.map { sfu_media_file_bytes($0) } ?? 0 }

    /// Writes the trailer and closes; once only.
    func close() throws {
        guard let h = handle else { return }
        handle = nil
        let r = sfu_media_file_close(h)
        if r < 0 { throw Failure(r) }
    }

    /// RFC 7845 section 5.1: the identification header Ogg Opus starts with (two channels, as WebRTC negotiates
    /// opus/48000/2; no pre-skip: the stream is cut from a live call, not encoded from its first sample).
    static let opusHead: [UInt8] = Array("OpusHead".utf8) + [1, 2, 0, 0] + [0x80, 0xBB, 0, 0] + [0, 0, 0]
}
