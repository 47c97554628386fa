// Anchors the precompiled header every test target reuses (tests/CMakeLists.txt).
