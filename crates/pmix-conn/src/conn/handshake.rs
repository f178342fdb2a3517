//! Running the connection handshake over a stream: send the connect-ack
//! ([`crate::codec::handshake`] builds it) and read the server's raw answer
//! (network-order integers and fixed-width namespace fields; nothing in the
//! reply is bfrops-packed).

use std::io::{Read, Write};

use crate::error::{Error, Result};
use crate::proto::status::Status;

pub use crate::codec::handshake::*;

use super::frame::{io_error, read_full, Header};

/// The complete connect-ack message: the connect header, then the body.
pub fn build_connect_ack(h: &Hello) -> Vec<u8> {
    let body = connect_ack_body(h);
    let mut msg = Vec::with_capacity(body.len() + 16);
    msg.extend_from_slice(&Header::encode_connect(body.len() as u32));
    msg.extend_from_slice(&body);
    msg
}

/// Run the handshake over an already-connected stream.
///
/// The stream should carry a read time-out so a silent server cannot hang us.
pub fn handshake<S: Read + Write>(stream: &mut S, hello: &Hello) -> Result<Welcome> {
    stream
        .write_all(&build_connect_ack(hello))
        .map_err(|e| io_error(e, "sending the connection request"))?;
    let status = read_status(stream, "the server's answer to our connection request")?;
    if !status.is_success() {
        return Err(Error::new(
            status,
            "the server refused the connection (identity or credentials not accepted)",
        ));
    }
    match &hello.identity {
        Identity::Client { nspace, rank } => {
            let pindex = read_u32(stream, "our client index")?;
            Ok(Welcome {
                nspace: nspace.clone(),
                rank: *rank,
                server_nspace: String::new(),
                server_rank: 0,
                pindex: Some(pindex),
            })
        }
        identity => {
            let (nspace, rank) = match identity {
                Identity::Tool => {
                    let ns = read_nspace(stream, "the namespace the server gave us")?;
                    let rank = read_u32(stream, "the rank the server gave us")?;
                    (ns, rank)
                }
                Identity::ToolWithId { nspace, rank } | Identity::Scheduler { nspace, rank } => {
                    (nspace.clone(), *rank)
                }
                Identity::Client { .. } => unreachable!("handled above"),
            };
            let server_nspace = read_nspace(stream, "the server's namespace")?;
            let server_rank = read_u32(stream, "the server's rank")?;
            let sec = read_status(stream, "the security check result")?;
            if !sec.is_success() {
                return Err(Error::new(sec, "the server's security check refused us"));
            }
            Ok(Welcome {
                nspace,
                rank,
                server_nspace,
                server_rank,
                pindex: None,
            })
        }
    }
}

fn read_exact_or<S: Read>(s: &mut S, buf: &mut [u8], what: &str) -> Result<()> {
    let got = read_full(s, buf)?;
    if got != buf.len() {
        return Err(Error::new(
            Status::ERR_LOST_CONNECTION,
            format!("the server closed the connection while sending {what}"),
        ));
    }
    Ok(())
}

fn read_u32<S: Read>(s: &mut S, what: &str) -> Result<u32> {
    let mut b = [0u8; 4];
    read_exact_or(s, &mut b, what)?;
    Ok(u32::from_be_bytes(b))
}

fn read_status<S: Read>(s: &mut S, what: &str) -> Result<Status> {
    Ok(Status(read_u32(s, what)? as i32))
}

fn read_nspace<S: Read>(s: &mut S, what: &str) -> Result<String> {
    let mut b = [0u8; NSPACE_FIELD];
    read_exact_or(s, &mut b, what)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(NSPACE_FIELD - 1);
    String::from_utf8(b[..end].to_vec())
        .map_err(|_| Error::new(Status::ERR_UNPACK_FAILURE, format!("{what} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(identity: Identity) -> Hello {
        Hello {
            identity,
            version: "4.2.2rc2".into(),
            bfrops: "v41".into(),
            buffer_kind: BUFFER_NON_DESCRIBED,
            uid: 0,
            gid: 0,
            info_blob: vec![],
        }
    }

    #[test]
    fn tool_connect_ack_matches_libpmix_layout() {
        // Same fields as a real libpmix 4.2.2 tool's connect-ack captured on
        // loopback, without its optional info blob.
        let m = build_connect_ack(&hello(Identity::Tool));
        let mut want = vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        let body: Vec<u8> = [
            &b"native\0"[..],
            &[0, 0, 0, 8],
            &[0; 8],
            &[3],
            &[0; 8],
            b"4.2.2rc2\0",
            b"v41\0",
            &[1],
            b"hash\0",
        ]
        .concat();
        want.extend_from_slice(&(body.len() as u32).to_le_bytes());
        want.extend_from_slice(&[0; 4]);
        want.extend_from_slice(&body);
        assert_eq!(m, want);
    }

    #[test]
    fn parses_tool_welcome() {
        let mut reply = vec![0, 0, 0, 0];
        let mut ns = [0u8; NSPACE_FIELD];
        ns[..14].copy_from_slice(b"prte-vm-2162@2");
        reply.extend_from_slice(&ns);
        reply.extend_from_slice(&[0, 0, 0, 0]);
        let mut sns = [0u8; NSPACE_FIELD];
        sns[..14].copy_from_slice(b"prte-vm-2162@0");
        reply.extend_from_slice(&sns);
        reply.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        let mut s = Duplex {
            input: &reply[..],
            output: vec![],
        };
        let w = handshake(&mut s, &hello(Identity::Tool)).unwrap();
        assert_eq!(w.nspace, "prte-vm-2162@2");
        assert_eq!(w.server_nspace, "prte-vm-2162@0");
        // truncated at every offset: a typed error, never a panic
        for cut in 0..reply.len() {
            let mut s = Duplex {
                input: &reply[..cut],
                output: vec![],
            };
            assert!(handshake(&mut s, &hello(Identity::Tool)).is_err());
        }
    }

    #[test]
    fn refused_status_is_reported() {
        let reply = (-23i32).to_be_bytes();
        let mut s = Duplex {
            input: &reply[..],
            output: vec![],
        };
        let e = handshake(&mut s, &hello(Identity::Tool)).unwrap_err();
        assert_eq!(e.status, Status(-23));
    }

    struct Duplex<'a> {
        input: &'a [u8],
        output: Vec<u8>,
    }
    impl Read for Duplex<'_> {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            self.input.read(b)
        }
    }
    impl Write for Duplex<'_> {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.output.write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
