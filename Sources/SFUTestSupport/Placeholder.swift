public enum SFUTestSupportPlaceholder {}
