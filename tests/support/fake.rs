//! Pieces of a fake PMIx server for tests that need a peer misbehaving on
//! purpose (a thread speaking just enough of the protocol).

/// The welcome a PMIx server sends a tool after its connect-ack: status 0,
/// the tool's namespace `fake@1` (rank 0), the server's `fake@0` (rank 0),
/// and an empty info blob.
pub fn tool_welcome() -> Vec<u8> {
    let mut r = vec![0, 0, 0, 0];
    let mut ns = [0u8; 256];
    ns[..6].copy_from_slice(b"fake@1");
    r.extend_from_slice(&ns);
    r.extend_from_slice(&[0; 4]);
    let mut sns = [0u8; 256];
    sns[..6].copy_from_slice(b"fake@0");
    r.extend_from_slice(&sns);
    r.extend_from_slice(&[0; 8]);
    r
}

/// The welcome a PMIx server sends a tool that brought its own identity
/// (a scheduler): status 0, the server's namespace `fake@0` (rank 0) and
/// the security check's status 0.
pub fn scheduler_welcome() -> Vec<u8> {
    let mut r = vec![0, 0, 0, 0];
    let mut sns = [0u8; 256];
    sns[..6].copy_from_slice(b"fake@0");
    r.extend_from_slice(&sns);
    r.extend_from_slice(&[0; 8]);
    r
}
