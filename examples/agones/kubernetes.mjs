// The one Kubernetes API call the backend makes: create a GameServerAllocation.
import { existsSync, readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

const SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Where the API is and how to call it. In a pod: the API server's service and the pod's service
 * account (RBAC in backend.yaml). K8S_API_URL overrides the address, e.g. `kubectl proxy` on
 * http://127.0.0.1:8001, which adds the credentials itself.
 */
export function kubernetesFromEnv(env = process.env) {
  const inPod = env.KUBERNETES_SERVICE_HOST !== undefined && existsSync(`${SERVICE_ACCOUNT}/token`);
  const url = env.K8S_API_URL || (inPod ? `https://${env.KUBERNETES_SERVICE_HOST}:${env.KUBERNETES_SERVICE_PORT ?? 443}` : undefined);
  if (url === undefined) throw new Error("no Kubernetes API: run in a pod, or set K8S_API_URL (e.g. http://127.0.0.1:8001 under `kubectl proxy`)");
  const namespace = env.NAMESPACE || (inPod ? readFileSync(`${SERVICE_ACCOUNT}/namespace`, "utf8").trim() : "default");
  return { url, namespace, serviceAccount: inPod && !env.K8S_API_URL };
}

/** POSTs `allocation` and resolves with the GameServerAllocation Agones answers. */
export function allocateGameServer(kubernetes, allocation) {
  const url = new URL(`/apis/allocation.agones.dev/v1/namespaces/${encodeURIComponent(kubernetes.namespace)}/gameserverallocations`, kubernetes.url);
  const headers = { "content-type": "application/json", accept: "application/json" };
  let ca;
  if (kubernetes.serviceAccount) {
    // Re-read per call: Kubernetes rotates the projected token.
    headers.authorization = `Bearer ${readFileSync(`${SERVICE_ACCOUNT}/token`, "utf8").trim()}`;
    ca = readFileSync(`${SERVICE_ACCOUNT}/ca.crt`);
  }
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method: "POST", headers, ca, timeout: 10_000 }, async (res) => {
      let text = "";
      for await (const chunk of res) text += chunk;
      if (res.statusCode !== 200 && res.statusCode !== 201) return reject(new Error(`Kubernetes API ${res.statusCode}: ${text.slice(0, 300)}`));
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new Error("Kubernetes API: the answer is not JSON"));
      }
    });
    req.on("timeout", () => req.destroy(new Error("Kubernetes API: no answer in 10 s")));
    req.on("error", reject);
    req.end(JSON.stringify(allocation));
  });
}
