import SFU
import Testing

/// The temporal layer rule on its own: down at a frame's start, up at a sync frame of the layer or a key frame.
@Suite struct TemporalFilterTests {
    @Test func goingDownTakesEffectAtTheNextFrameNotInsideOne() {
        var f = TemporalFilter()
        f.target = 0
        let a1 = f.admits(tid: 2, frameStart: false, layerSync: false, keyframe: false)
        #expect(a1, "the rest of a frame already begun")
        let a2 = f.admits(tid: 2, frameStart: true, layerSync: false, keyframe: false)
        #expect(!a2)
        let a3 = f.admits(tid: 0, frameStart: true, layerSync: false, keyframe: false)
        #expect(a3)
        let a4 = f.admits(tid: 1, frameStart: true, layerSync: true, keyframe: false)
        #expect(!a4)
    }

    @Test func goingUpWaitsForASyncFrameOfTheLayer() {
        var f = TemporalFilter(target: 0)
        f.target = 2
        let a5 = f.admits(tid: 1, frameStart: true, layerSync: false, keyframe: false)
        #expect(!a5, "it may reference a dropped TL1 frame")
        let a6 = f.admits(tid: 1, frameStart: false, layerSync: false, keyframe: false)
        #expect(!a6)
        let a7 = f.admits(tid: 1, frameStart: true, layerSync: true, keyframe: false)
        #expect(a7, "Y: it references the base layer only")
        #expect(f.limit == 1)
        let a8 = f.admits(tid: 2, frameStart: true, layerSync: false, keyframe: false)
        #expect(!a8)
        let a9 = f.admits(tid: 2, frameStart: true, layerSync: true, keyframe: false)
        #expect(a9)
        #expect(f.limit == 2)
    }

    @Test func aKeyFrameOpensEveryLayerUpToTheTarget() {
        var f = TemporalFilter(target: 0)
        f.target = nil
        let a10 = f.admits(tid: 0, frameStart: true, layerSync: false, keyframe: true)
        #expect(a10)
        #expect(f.limit == nil)
        let a11 = f.admits(tid: 2, frameStart: true, layerSync: false, keyframe: false)
        #expect(a11)
    }

    @Test func allLayersAgainReachesTheTopBySyncFrames() {
        var f = TemporalFilter(target: 1)
        f.target = nil
        let a12 = f.admits(tid: 2, frameStart: true, layerSync: false, keyframe: false)
        #expect(!a12)
        let a13 = f.admits(tid: 2, frameStart: true, layerSync: true, keyframe: false)
        #expect(a13)
        let a14 = f.admits(tid: 2, frameStart: true, layerSync: false, keyframe: false)
        #expect(a14, "TL2 and below pass from its sync frame on")
    }
}
