import CVPXShims
import CVPX
import SFU

/// One encoded VP8 frame.
public struct VP8Frame: Sendable {
    public var data: [UInt8]
    public var isKeyframe: Bool

    public init(data: [UInt8], isKeyframe: Bool) {
        self.data = data
        self.isKeyframe = isKeyframe
    }
}

/// A libvpx VP8 encoder over a synthetic moving picture, for real video in tests and the load generator.
public final class VP8FrameEncoder {
    public let width: Int
    public let height: Int
    private var ctx = vpx_codec_ctx_t()
    private var image = vpx_image_t()
    private var frameIndex = 0
    private let seed: UInt8

    public init(width: Int = 160, height: Int = 120, bitrateKbps: Int = 300, fps: Int = 30, seed: UInt8 = 0) {
        self.width = width
        self.height = height
        self.seed = seed
        var cfg = vpx_codec_enc_cfg_t()
        precondition(sfu_vpx_vp8_encoder_default_config(&cfg) == VPX_CODEC_OK)
        cfg.g_w = UInt32(width)
        cfg.g_h = UInt32(height)
        cfg.g_timebase = vpx_rational(num: 1, den: Int32(fps))
        cfg.rc_target_bitrate = UInt32(bitrateKbps)
        cfg.g_error_resilient = 1
        cfg.g_lag_in_frames = 0
        cfg.kf_max_dist = 3000  // keyframes only when forced: the SFU must ask with PLI
        cfg.kf_mode = VPX_KF_DISABLED
        cfg.g_threads = 1
        precondition(sfu_vpx_vp8_encoder_init(&ctx, &cfg) == VPX_CODEC_OK)
        _ = sfu_vpx_control_int(&ctx, Int32(VP8E_SET_CPUUSED.rawValue), 16)
        precondition(vpx_img_alloc(&image, VPX_IMG_FMT_I420, UInt32(width), UInt32(height), 16) != nil)
    }

    deinit {
        vpx_img_free(&image)
        vpx_codec_destroy(&ctx)
    }

    /// Encodes the next picture; `keyframe` forces an intra frame.
    public func next(keyframe: Bool = false) -> VP8Frame {
        paint()
        let flags: vpx_enc_frame_flags_t = keyframe ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        precondition(vpx_codec_encode(&ctx, &image, vpx_codec_pts_t(frameIndex), 1, flags, UInt(VPX_DL_REALTIME)) == VPX_CODEC_OK)
        frameIndex += 1
        var iter: vpx_codec_iter_t? = nil
        var buf: UnsafeRawPointer? = nil
        var size = 0
        var key: Int32 = 0
        var out = VP8Frame(data: [], isKeyframe: false)
        while sfu_vpx_next_frame(&ctx, &iter, &buf, &size, &key) == 1 {
            out.data += Array(UnsafeRawBufferPointer(start: buf, count: size))
            out.isKeyframe = out.isKeyframe || key != 0
        }
        return out
    }

    /// A moving gradient, different per seed, so frames change and sources are told apart.
    private func paint() {
        let t = frameIndex
        let y = image.planes.0!
        let stride = Int(image.stride.0)
        for row in 0..<height {
            for col in 0..<width {
                y[row * stride + col] = UInt8(truncatingIfNeeded: (row + col + 3 * t) ^ Int(seed) * 37)
            }
        }
        for (plane, value) in [(image.planes.1!, Int(seed) &* 50 &+ t), (image.planes.2!, 128 + t)] {
            let s = Int(plane == image.planes.1! ? image.stride.1 : image.stride.2)
            for row in 0..<(height / 2) {
                for col in 0..<(width / 2) { plane[row * s + col] = UInt8(truncatingIfNeeded: value) }
            }
        }
    }
}

/// Splits VP8 frames into RTP payloads (RFC 7741 section 4) with a 15-bit picture ID and TL0PICIDX.
public struct VP8Packetizer {
    public var pictureID: UInt16
    public var tl0PicIdx: UInt8
    public let maxPayload: Int

    public init(pictureID: UInt16 = 0, tl0PicIdx: UInt8 = 0, maxPayload: Int = 1100) {
        self.pictureID = pictureID & 0x7FFF
        self.tl0PicIdx = tl0PicIdx
        self.maxPayload = maxPayload
    }

    /// The payloads of one frame; the last one carries the marker bit.
    public mutating func packetize(_ frame: VP8Frame) -> [[UInt8]] {
        let descriptorSize = 5
        let chunk = maxPayload - descriptorSize
        var payloads: [[UInt8]] = []
        var offset = 0
        while offset < frame.data.count || payloads.isEmpty {
            let end = min(frame.data.count, offset + chunk)
            var p: [UInt8] = [0x80 | (offset == 0 ? 0x10 : 0), 0xC0, 0x80 | UInt8(pictureID >> 8), UInt8(pictureID & 0xFF), tl0PicIdx]
            p += frame.data[offset..<end]
            payloads.append(p)
            offset = end
        }
        pictureID = (pictureID &+ 1) & 0x7FFF
        tl0PicIdx &+= 1
        return payloads
    }
}

/// Reassembles received VP8 RTP packets into frames and decodes them with libvpx, the way a receiver would:
/// a frame is complete when its packets run from S=1 to the marker without a sequence gap.
public final class VP8StreamChecker {
    private var ctx = vpx_codec_ctx_t()
    private var current: [UInt8] = []
    private var expectSeq: UInt16?
    private var inFrame = false
    private var frameBroken = false
    public private(set) var decodedFrames = 0
    public private(set) var keyframes = 0
    public private(set) var errors: [String] = []
    public private(set) var incompleteFrames = 0
    public private(set) var pictureIDs: [UInt16] = []
    private var lastFrameDecoded = false

    public init() {
        precondition(sfu_vpx_vp8_decoder_init(&ctx) == VPX_CODEC_OK)
    }

    deinit { vpx_codec_destroy(&ctx) }

    /// Feeds one plain RTP packet (after SRTP) of the stream.
    public func receive(_ packet: [UInt8]) {
        packet.withUnsafeBytes { raw in
            guard case .success(let h) = RTPHeader.parse(raw) else { errors.append("bad RTP"); return }
            let payload = UnsafeRawBufferPointer(rebasing: raw[h.payloadRange])
            guard case .success(let d) = VP8Descriptor.parse(payload) else { errors.append("bad VP8 descriptor"); return }
            if let e = expectSeq, e != h.sequenceNumber { frameBroken = true }
            expectSeq = h.sequenceNumber &+ 1
            if d.startOfPartition && d.partitionIndex == 0 {
                if inFrame { incompleteFrames += 1 }
                current = []
                inFrame = true
                frameBroken = false
                if let pid = d.pictureID { pictureIDs.append(pid) }
            }
            guard inFrame else { return }
            current += payload[d.size...]
            if h.marker {
                inFrame = false
                if frameBroken { incompleteFrames += 1; return }
                decode(current)
            }
        }
    }

    private func decode(_ frame: [UInt8]) {
        let isKey = (frame.first ?? 1) & 1 == 0
        if !lastFrameDecoded && !isKey {
            return  // a real receiver waits for a keyframe; the SFU must not make it wait long
        }
        let status = frame.withUnsafeBufferPointer { vpx_codec_decode(&ctx, $0.baseAddress, UInt32($0.count), nil, 0) }
        var iter: vpx_codec_iter_t? = nil
        while vpx_codec_get_frame(&ctx, &iter) != nil {}
        if status != VPX_CODEC_OK {
            errors.append("decode error \(status.rawValue) at frame \(decodedFrames)")
            lastFrameDecoded = false
            return
        }
        if sfu_vpx_frame_corrupted(&ctx) == 1 {
            errors.append("corrupted frame \(decodedFrames)")
        }
        lastFrameDecoded = true
        decodedFrames += 1
        if isKey { keyframes += 1 }
    }
}
