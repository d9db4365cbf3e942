// rateKeyOf (src/session/address.ts): the host a per-source rate limit counts an address under.
import { describe, expect, it } from "vitest";
import { rateKeyOf } from "../../src/session/address.js";

describe("rateKeyOf", () => {
  it("drops the port; keeps an IPv4 address whole and an IPv6 one's /64, however it is spelled", () => {
    expect(rateKeyOf("203.0.113.5:40000")).toBe("203.0.113.5");
    expect(rateKeyOf("203.0.113.5:1")).toBe(rateKeyOf("203.0.113.5:65535"));
    expect(rateKeyOf("203.0.113.6:1")).not.toBe(rateKeyOf("203.0.113.5:1"));
    const a = rateKeyOf("[2001:db8:1:2::1]:7777");
    expect(a).toBe("[2001:db8:1:2::/64]");
    expect(rateKeyOf("[2001:DB8:1:2:ffff:0:0:9]:1")).toBe(a);
    expect(rateKeyOf("[2001:0db8:0001:0002::]:9")).toBe(a);
    expect(rateKeyOf("[2001:db8:1:3::1]:7777")).not.toBe(a);
    expect(rateKeyOf("[::2]:5")).toBe("[0:0:0:0::/64]");
    // IPv4 clients of a dual-stack (::) socket arrive IPv4-mapped: each counts as its IPv4 host,
    // not all together as ::ffff:0:0/96's one /64 (found by a review).
    expect(rateKeyOf("[::ffff:198.51.100.7]:5000")).toBe("198.51.100.7");
    expect(rateKeyOf("[::FFFF:198.51.100.7]:1")).toBe("198.51.100.7");
    expect(rateKeyOf("[::ffff:c633:6407]:5000")).toBe("198.51.100.7");
    expect(rateKeyOf("[::ffff:198.51.100.8]:5000")).not.toBe(rateKeyOf("[::ffff:198.51.100.7]:5000"));
    // Loopback counts per address: nobody outside can send from it.
    expect(rateKeyOf("127.0.0.1:5000")).toBe("127.0.0.1:5000");
    expect(rateKeyOf("127.0.0.1:5001")).not.toBe(rateKeyOf("127.0.0.1:5000"));
    expect(rateKeyOf("[::1]:5")).toBe("[::1]:5");
    expect(rateKeyOf("[::ffff:127.0.0.1]:5")).toBe("[::ffff:127.0.0.1]:5");
    // What does not parse counts alone, never with another address.
    expect(rateKeyOf("[1::2::3]:1")).toBe("[1::2::3]");
    expect(rateKeyOf("nonsense")).toBe("nonsense");
  });
});
