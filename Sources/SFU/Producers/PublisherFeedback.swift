/// What the node tells publishers, so that their own controllers see the path and the room (issue 13):
/// receiver reports (RFC 3550 section 6.4.2), transport-wide feedback for their GCC
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01), NACKs for what went missing (RFC 4585, answered
/// with RTX), and REMB: a camera is asked for no more than the best-placed of its subscribers can take, so a
/// 2 Mbit/s camera does not flood a room of 300 kbit/s receivers; a publisher without transport-cc gets the
/// lower of that and its uplink as the node measured it (`ReceiveSideEstimator`), as a receiver's REMB would.
struct PublisherFeedback {
    /// The transport-wide sequence number's id, and the arrivals the publisher gets feedback on.
    var transportCCExtensionID: UInt8?
    var recorder: TransportFeedbackRecorder?
    /// A REMB-only publisher's uplink, estimated from abs-send-time (its video track's id).
    var absSendTimeExtensionID: UInt8?
    var uplink: ReceiveSideEstimator?
    /// The publisher takes REMB (on its video), and when the node next tells it how much its subscribers can
    /// take: every second while its video arrives, not while it sends none.
    var remb = false
    var nextREMB: MonoTime = .never
    /// When the next receiver report is due (armed by the first packet received).
    var nextReceiverReport: MonoTime = .never
    var receiverReportInterval: MonoTime.Interval = .seconds(1)

    /// What the publisher's tracks negotiated: transport-cc on one of them, abs-send-time on its video, REMB.
    mutating func negotiate(transportCC: UInt8?, absSendTime: UInt8?, remb: Bool) {
        if transportCC != transportCCExtensionID {
            transportCCExtensionID = transportCC
            recorder = transportCC.map { _ in TransportFeedbackRecorder() }
        }
        if absSendTime != absSendTimeExtensionID {
            absSendTimeExtensionID = absSendTime
            uplink = absSendTime.map { _ in ReceiveSideEstimator() }
        }
        self.remb = remb
        if remb, nextREMB == .never { nextREMB = .zero } else if !remb { nextREMB = .never }
    }

    /// A video packet arrived: REMB resumes if it had stopped (the publisher sent no video).
    mutating func videoArrived(now: MonoTime, effects: RoomEffects) {
        guard remb, nextREMB == .never else { return }
        nextREMB = now
        effects.wake(at: now)
    }

    /// Records an authenticated packet's arrival: its transport-wide sequence number for the feedback, or its
    /// abs-send-time for the node's own estimate of the uplink.
    mutating func recordArrival(_ plain: UnsafeRawBufferPointer, _ header: RTPHeader, at arrivedAt: MonoTime, size: Int,
                                effects: RoomEffects) {
        if let id = transportCCExtensionID, let r = header.extensions(in: plain).find(id), r.count == 2 {
            recorder?.record(sequence: plain.u16(r.lowerBound), arrival: arrivedAt)
            if let f = recorder, f.hasPending { effects.wake(at: f.nextFeedback) }
        } else if let id = absSendTimeExtensionID, let r = header.extensions(in: plain).find(id), r.count == 3 {
            uplink?.packet(absSendTime: plain.u24(r.lowerBound), arrival: arrivedAt, size: size)
        }
    }
}
