//! oxla-pjrt: the PJRT C API shim.
