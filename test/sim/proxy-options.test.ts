import { describe, expect, it } from "vitest";
import { ProxyUsageError, parseBandwidth, parseHostPort, parseProxyArgs } from "../../src/sim/proxy-options.js";

function usageError(argv: string[]): string {
  try {
    parseProxyArgs(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(ProxyUsageError);
    expect((e as ProxyUsageError).code).toBe("ERR_PROXY_USAGE");
    return (e as Error).message;
  }
  throw new Error(`expected a usage error for ${argv.join(" ")}`);
}

describe("proxy flags", () => {
  it("parses the documented example", () => {
    const cmd = parseProxyArgs(
      "--listen 127.0.0.1:9000 --to 127.0.0.1:7777 --loss 5 --latency 40 --jitter 10 --burst 1,25 --reorder 2 --duplicate 1 --corrupt 0.5 --bandwidth 2mbit --queue 50 --mtu 1200 --seed 3 --duration 10".split(" "),
    );
    expect(cmd.listen).toEqual({ host: "127.0.0.1", port: 9000, family: 4 });
    expect(cmd.upstream).toEqual({ host: "127.0.0.1", port: 7777, family: 4 });
    expect(cmd.link).toEqual({
      lossRate: 0.05,
      latencyMs: 40,
      jitterMs: 10,
      burst: { pGoodToBad: 0.01, pBadToGood: 0.25, lossInBad: 1, lossInGood: 0 },
      reorderRate: 0.02,
      duplicateRate: 0.01,
      corruptRate: 0.005,
      bandwidthBps: 2_000_000,
      queuePackets: 50,
      mtu: 1200,
    });
    expect(cmd.seed).toBe(3);
    expect(cmd.durationS).toBe(10);
    expect(cmd.help).toBe(false);
  });

  it("parses --rebind-every (0 or absent: never)", () => {
    expect(parseProxyArgs(["--to", "127.0.0.1:7777"]).rebindEveryS).toBe(0);
    expect(parseProxyArgs(["--to", "127.0.0.1:7777", "--rebind-every", "30"]).rebindEveryS).toBe(30);
    expect(parseProxyArgs(["--to", "127.0.0.1:7777", "--rebind-every=0"]).rebindEveryS).toBe(0);
  });

  it("accepts --flag=value, IPv6 and defaults", () => {
    const cmd = parseProxyArgs(["--to=[::1]:7777", "--loss=5%", "--jitter-reorders"]);
    expect(cmd.upstream).toEqual({ host: "::1", port: 7777, family: 6 });
    expect(cmd.listen).toEqual({ host: "127.0.0.1", port: 9000, family: 4 });
    expect(cmd.link).toEqual({ lossRate: 0.05, reorder: true });
    expect(cmd.seed).toBe(1);
    expect(cmd.idleTimeoutMs).toBe(60_000);
    expect(parseProxyArgs(["--help"]).help).toBe(true);
    expect(parseHostPort("localhost:80", "to").family).toBe("name");
  });

  it("parses bandwidth units and refuses byte units", () => {
    expect(parseBandwidth("2mbit")).toBe(2e6);
    expect(parseBandwidth("500kbit")).toBe(5e5);
    expect(parseBandwidth("1.5Gbit")).toBe(1.5e9);
    expect(parseBandwidth("64000")).toBe(64000);
    expect(() => parseBandwidth("2mbps")).toThrow(/mbit/);
    expect(() => parseBandwidth("0")).toThrow(/greater than 0/);
  });

  it("explains every invalid flag with the fix", () => {
    expect(usageError([])).toMatch(/--to HOST:PORT is required/);
    expect(usageError(["--to", "7777"])).toMatch(/HOST:PORT/);
    expect(usageError(["--to", "::1:7777"])).toMatch(/\[::1\]:9000/);
    expect(usageError(["--to", "127.0.0.1:99999"])).toMatch(/0 to 65535/);
    expect(usageError(["--to", "127.0.0.1:7777", "--loss", "150"])).toMatch(/0 to 100/);
    expect(usageError(["--to", "127.0.0.1:7777", "--loss", "abc"])).toMatch(/percentage/);
    expect(usageError(["--to", "127.0.0.1:7777", "--latency", "-3"])).toMatch(/>= 0/);
    expect(usageError(["--to", "127.0.0.1:7777", "--queue", "50"])).toMatch(/add --bandwidth/);
    expect(usageError(["--to", "127.0.0.1:7777", "--burst", "5"])).toMatch(/GB,BG/);
    expect(usageError(["--to", "127.0.0.1:7777", "--burst", "5,0"])).toMatch(/must be > 0/);
    expect(usageError(["--to", "127.0.0.1:7777", "--mtu", "12.5"])).toMatch(/whole number/);
    expect(usageError(["--to", "127.0.0.1:7777", "--frobnicate", "1"])).toMatch(/unknown option --frobnicate/);
    expect(usageError(["--to", "127.0.0.1:7777", "--loss"])).toMatch(/needs a value/);
    expect(usageError(["--to", "127.0.0.1:7777", "--loss", "1", "--loss", "2"])).toMatch(/given twice/);
    expect(usageError(["--to", "127.0.0.1:7777", "extra"])).toMatch(/unexpected argument/);
    expect(usageError(["--to", "127.0.0.1:0"])).toMatch(/cannot be 0/);
    expect(usageError(["--to", "127.0.0.1:7777", "--seed", "1.5"])).toMatch(/integer/);
  });
});
