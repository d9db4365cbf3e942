/** The two candidate filters of the signaling endpoint (SDP text in, SDP text out). */

/** `a=candidate:<foundation> <component> <transport> <priority> <address> <port> typ ...`: the address field. */
function candidateAddress(line: string): string | undefined {
  const fields = line.slice("a=candidate:".length).split(" ");
  return fields[4];
}

function filterCandidates(sdp: string, keep: (address: string) => boolean): string {
  const eol = sdp.includes("\r\n") ? "\r\n" : "\n";
  return sdp
    .split(/\r?\n/)
    .filter((line) => {
      if (!line.startsWith("a=candidate:")) return true;
      const address = candidateAddress(line);
      return address !== undefined && keep(address);
    })
    .join(eol);
}

/**
 * An offer without any candidate (see the caller), and without `a=end-of-candidates`: told
 * there will be none, werift fails ICE at once instead of waiting for the browser's checks
 * (peer-reflexive candidates).
 */
export function withoutCandidates(sdp: string): string {
  return filterCandidates(sdp, () => false)
    .split(/(?<=\n)/)
    .filter((line) => !line.startsWith("a=end-of-candidates"))
    .join("");
}

/** An answer whose candidates are only those on `addresses` (the ones browsers reach the server at). */
export function onlyCandidates(sdp: string, addresses: readonly string[]): string {
  return filterCandidates(sdp, (address) => addresses.includes(address));
}
