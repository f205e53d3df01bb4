import SFUMedia
import SFUSimulation
import Testing
@testable import SFUBase

@Suite struct SRTPBackendTests {
    @Test func theLinkedBackendIsNamedAndMeasured() {
        let b = SRTPBackend.current
        #expect(b.name == "openssl" || b.name == "nss")
        #expect(b.version.contains("libsrtp"))
        #expect(b.protectNanoseconds > 0 && b.protectNanoseconds.isFinite)
    }
}
