//! Batched submission: many hot-path requests in one message, answered by one message.
//!
//! A client that runs many small tasks pays a round trip (two wake-ups, two copies, a
//! turn of the daemon's loop) per request however little the daemon does for it. A
//! `batch` carries up to [`MAX_BATCH`] `alloc`, `rerequest` and `free` requests; the
//! daemon handles them in order exactly as if they had come one by one, collects their
//! replies, and sends them back in one `batch` reply. So the batch costs one round trip,
//! and the rules of the protocol stay those of single requests (a client still holds at
//! most one unit at a time; an `alloc` in a batch may wait in a queue, and the rest of
//! the batch waits behind it).
//!
//! A batch is bounded three ways: its count ([`MAX_BATCH`]), its frame (the request
//! limit, or the page's slot, as any frame), and its reply (the limits on unread
//! replies apply to it as a whole). A client may not send anything else while its batch
//! is being answered.

use crate::protocol::{Reply, Request, MAX_BATCH};
use std::collections::VecDeque;

/// Checks what a batch carries: 1 to [`MAX_BATCH`] requests, each `alloc`, `rerequest`
/// or `free`. The error names the field and the accepted range.
pub fn check(requests: &[Request]) -> Result<(), String> {
    if !(1..=MAX_BATCH).contains(&requests.len()) {
        return Err(format!(
            "batch requests: {} requests, accepted 1..={MAX_BATCH}",
            requests.len()
        ));
    }
    for (i, r) in requests.iter().enumerate() {
        if !matches!(
            r,
            Request::Alloc { .. } | Request::Rerequest | Request::Free { .. }
        ) {
            return Err(format!(
                "batch requests[{i}]: only alloc, rerequest and free may be batched"
            ));
        }
    }
    Ok(())
}

/// A batch the daemon is answering.
#[derive(Debug)]
pub struct Batch {
    /// The requests not handled yet.
    rest: VecDeque<Request>,
    /// Requests handled so far (each is answered by exactly one reply).
    handled: usize,
    /// Their replies so far, in order.
    replies: Vec<Reply>,
    /// The batch came through the shared page: so must its reply.
    pub via_page: bool,
}

impl Batch {
    pub fn new(requests: Vec<Request>, via_page: bool) -> Batch {
        Batch {
            replies: Vec::with_capacity(requests.len()),
            rest: requests.into(),
            handled: 0,
            via_page,
        }
    }

    /// The next request to handle, unless one handled still waits for its reply (an
    /// `alloc` in a queue) or none is left.
    pub fn take_next(&mut self) -> Option<Request> {
        if self.waiting() {
            return None;
        }
        let r = self.rest.pop_front()?;
        self.handled += 1;
        Some(r)
    }

    /// The next request to handle, without taking it.
    pub fn peek(&self) -> Option<&Request> {
        self.rest.front()
    }

    /// A request handled still waits for its reply.
    pub fn waiting(&self) -> bool {
        self.replies.len() < self.handled
    }

    /// Every request is handled and answered.
    pub fn complete(&self) -> bool {
        self.rest.is_empty() && !self.waiting()
    }

    /// Collects the reply to the oldest unanswered request.
    pub fn answer(&mut self, reply: Reply) {
        self.replies.push(reply);
    }

    /// The batch's reply.
    pub fn reply(self) -> Reply {
        Reply::Batch {
            replies: self.replies,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_field_and_the_range() {
        assert_eq!(
            check(&[]),
            Err(format!(
                "batch requests: 0 requests, accepted 1..={MAX_BATCH}"
            ))
        );
        let many = vec![Request::Rerequest; MAX_BATCH + 1];
        assert!(check(&many).unwrap_err().contains("1025 requests"));
        assert!(check(&many[..MAX_BATCH]).is_ok());
        let err = check(&[Request::Rerequest, Request::Stats]).unwrap_err();
        assert_eq!(
            err,
            "batch requests[1]: only alloc, rerequest and free may be batched"
        );
        let nested = Request::Batch {
            requests: vec![Request::Rerequest],
        };
        assert!(check(&[nested]).unwrap_err().contains("requests[0]"));
    }

    #[test]
    fn a_waiting_request_holds_the_rest_back() {
        let mut b = Batch::new(vec![Request::Rerequest, Request::Rerequest], false);
        assert_eq!(b.take_next(), Some(Request::Rerequest));
        assert!(b.waiting() && !b.complete());
        assert_eq!(b.take_next(), None, "the first is not answered yet");
        b.answer(Reply::Freed);
        assert_eq!(b.take_next(), Some(Request::Rerequest));
        b.answer(Reply::Done);
        assert!(b.complete());
        assert_eq!(b.take_next(), None);
        assert_eq!(
            b.reply(),
            Reply::Batch {
                replies: vec![Reply::Freed, Reply::Done]
            }
        );
    }
}
