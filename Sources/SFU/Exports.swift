// The engine's users speak its base types too (time, ids, wire formats, descriptions): importing SFU brings
// them, as importing NIOPosix brings NIOCore's.
@_exported import SFUBase
