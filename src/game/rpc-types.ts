/**
 * Types for typed RPC: a method map, e.g.
 *
 *   interface GameRpc {
 *     move(params: { x: number; y: number }): { ok: boolean };
 *     ping(): number;
 *   }
 *
 * given to RpcPeer / attachRpc as a type parameter, makes `call("move", params)` check the
 * method name and the params and infer the result type, and the handlers' too. Nothing here
 * exists at run time: the map is a contract both sides compile against (the decoder does not
 * check shapes: validate what an untrusted peer sends in the handler). The codec carries
 * `undefined` as null, so a method without params, or returning nothing, sees null.
 */
import type { Value } from "./codec.js";
import type { CallOptions, RpcContext } from "./rpc.js";

/** A method map: each method a function type `(params) => result` (or `() => result`). */
export type RpcMethods<T> = { [K in keyof T]: (...args: any[]) => unknown };

/** The map of an untyped peer (the default): any method, any params, results as Values. */
export interface UntypedRpc {
  [method: string]: (params?: any) => any;
}

type IsAny<T> = 0 extends 1 & T ? true : false;
/** `undefined` and `void` arrive as null (the codec's undefined). */
type Decoded<T> = T extends undefined | void ? null : T;

/** A method's params as the caller gives them (undefined for one that takes none). */
export type RpcParams<F> = F extends (...args: infer A) => unknown ? (A extends [] ? undefined : A[0]) : never;
/** What `call()` resolves with: the method's result (a Value on an untyped peer). */
export type RpcResult<F> = F extends (...args: any[]) => infer R ? (IsAny<R> extends true ? Value : Decoded<Awaited<R>>) : never;
/** The method names of a map. */
export type RpcMethodName<T> = keyof T & string;
/** call()'s arguments after the method name: params (optional when undefined fits), then options. */
export type RpcCallArgs<F> = undefined extends RpcParams<F> ? [params?: RpcParams<F>, options?: CallOptions] : [params: RpcParams<F>, options?: CallOptions];
/** notify()'s arguments after the method name. */
export type RpcNotifyArgs<F> = undefined extends RpcParams<F> ? [params?: RpcParams<F>] : [params: RpcParams<F>];

type HandlerParams<F> = IsAny<RpcParams<F>> extends true ? Value : Decoded<RpcParams<F>>;
type HandlerResult<F> = F extends (...args: any[]) => infer R ? (IsAny<R> extends true ? unknown : Awaited<R> | PromiseLike<Awaited<R>>) : never;
/** Handlers for the methods of `T` this side answers (each optional: an absent one answers ERR_RPC_UNKNOWN_METHOD). */
export type RpcHandlers<T> = { [K in keyof T]?: (params: HandlerParams<T[K]>, ctx: RpcContext) => HandlerResult<T[K]> };
