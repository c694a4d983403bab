package io.payidem;

import com.sun.jna.Callback;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.ByteByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import com.sun.jna.ptr.ShortByReference;

/**
 * The C ABI (include/payidem.h) through JNA direct mapping. Types: size_t,
 * uint64_t as long; uint32_t as int; uint16_t as short; C bool as byte;
 * strings in as NUL-terminated UTF-8 byte arrays ({@link Text#c}), strings
 * out as Pointer read as UTF-8 ({@link Text#read}). Handles are Pointers.
 */
final class Lib {
    static {
        Native.register(Lib.class, NativeLoader.load());
    }

    private Lib() {}

    /** Makes sure the library is loaded (the class initializer ran). */
    static void ensureLoaded() {}

    /** payidem_cancel_callback: non-zero cancels the call. */
    interface CancelCallback extends Callback {
        /** Polled before every attempt and during waits, on the calling thread. */
        int invoke(Pointer userdata);
    }

    /** payidem_event_json_callback. */
    interface EventJsonCallback extends Callback {
        /** One event as JSON, borrowed for the call only. */
        void invoke(Pointer userdata, Pointer eventJson);
    }

    // Versions, names and tables.
    static native Pointer payidem_version();

    static native int payidem_abi_version();

    static native Pointer payidem_result_name(int code);

    static native int payidem_result_max_error_code();

    static native byte payidem_result_is_final(int code);

    static native Pointer payidem_operation_state_name(int state);

    static native Pointer payidem_attempt_outcome_name(int outcome);

    static native Pointer payidem_next_action_name(int action);

    static native Pointer payidem_landed_name(int landed);

    static native Pointer payidem_attempt_kind_name(int kind);

    static native Pointer payidem_decision_kind_name(int kind);

    static native Pointer payidem_signed_header_name(int index);

    static native Pointer payidem_log_level_name(int level);

    static native int payidem_refusal_verification_code_at(long index);

    static native int payidem_client_options_resolve(byte[] optionsJson, PointerByReference jsonOut,
            PointerByReference err);

    static native int payidem_operation_start_resolve(byte[] startJson, PointerByReference jsonOut,
            PointerByReference err);

    static native void payidem_string_free(Pointer text);

    static native Pointer payidem_client_defaults_json();

    // Errors.
    static native int payidem_error_code(Pointer err);

    static native Pointer payidem_error_message(Pointer err);

    static native Pointer payidem_error_field(Pointer err);

    static native short payidem_error_http_status(Pointer err);

    static native byte payidem_error_body(Pointer err, PointerByReference body, LongByReference len);

    static native Pointer payidem_error_platform_code(Pointer err);

    static native Pointer payidem_error_platform_message(Pointer err);

    static native Pointer payidem_error_order_id(Pointer err);

    static native Pointer payidem_error_idempotency_key(Pointer err);

    static native byte payidem_error_server_time(Pointer err, LongByReference serverTime);

    static native void payidem_error_free(Pointer err);

    // Signing.
    static native int payidem_signer_new(byte[] keyId, Pointer secret, long secretLen, PointerByReference out,
            PointerByReference err);

    static native void payidem_signer_free(Pointer signer);

    static native int payidem_signer_sign_into(Pointer signer, Pointer method, Pointer path, Pointer idempotencyKey,
            Pointer body, long bodyLen, long timestamp, Pointer headersOut, PointerByReference err);

    static native int payidem_signer_sign_parts(Pointer signer, byte[] method, byte[] path, byte[] timestamp,
            byte[] nonce, byte[] idempotencyKey, byte[] body, long bodyLen, byte[] buf, long bufLen,
            PointerByReference err);

    static native int payidem_canonical_string(byte[] method, byte[] path, byte[] timestamp, byte[] nonce,
            byte[] idempotencyKey, byte[] body, long bodyLen, byte[] buf, long bufLen, LongByReference lenOut,
            PointerByReference err);

    static native int payidem_body_sha256_hex(byte[] body, long bodyLen, byte[] buf, long bufLen,
            PointerByReference err);

    // Verification.
    static native int payidem_verifier_new_with_replay_store(long windowSeconds, long capacityPerKey,
            byte[] replayStore, PointerByReference out, PointerByReference err);

    static native int payidem_verifier_add_key(Pointer verifier, byte[] keyId, Pointer secrets, Pointer lens,
            long count, PointerByReference err);

    static native int payidem_verifier_set_secrets(Pointer verifier, byte[] keyId, Pointer secrets, Pointer lens,
            long count, PointerByReference err);

    static native int payidem_verifier_remove_key(Pointer verifier, byte[] keyId, PointerByReference err);

    static native int payidem_verifier_verify_into(Pointer verifier, byte[] method, byte[] path, Pointer headers,
            long headerCount, byte[] body, long bodyLen, long now, byte[] verifiedOut, ShortByReference status,
            PointerByReference err);

    static native void payidem_verifier_free(Pointer verifier);

    // Refusals.
    static native int payidem_refusal_new(int code, byte[] message, long serverTime, PointerByReference out,
            PointerByReference err);

    static native short payidem_refusal_status(Pointer refusal);

    static native Pointer payidem_refusal_code(Pointer refusal);

    static native long payidem_refusal_header_count(Pointer refusal);

    static native int payidem_refusal_header_at(Pointer refusal, long index, PointerByReference name,
            PointerByReference value, PointerByReference err);

    static native byte payidem_refusal_body(Pointer refusal, PointerByReference body, LongByReference len);

    static native void payidem_refusal_free(Pointer refusal);

    // The client.
    static native int payidem_client_new(byte[] optionsJson, Pointer secret, long secretLen, PointerByReference out,
            PointerByReference err);

    static native void payidem_client_free(Pointer client);

    static native void payidem_client_set_event_json_callback(Pointer client, EventJsonCallback callback,
            Pointer userdata);

    static native int payidem_client_execute(Pointer client, byte[] orderId, byte[] method, byte[] path, byte[] body,
            long bodyLen, byte[] idempotencyKey, byte[] statusPath, PointerByReference outcome,
            PointerByReference err);

    static native int payidem_client_resume(Pointer client, byte[] orderId, PointerByReference outcome,
            PointerByReference err);

    static native int payidem_client_status(Pointer client, byte[] orderId, ByteByReference found,
            IntByReference state, IntByReference attempts, PointerByReference err);

    static native int payidem_client_list_unknown(Pointer client, PointerByReference list, PointerByReference err);

    static native int payidem_client_take_over(Pointer client, int limit, PointerByReference taken,
            PointerByReference err);

    static native int payidem_client_take_over_loop(Pointer client, int batch, long idleMs, CancelCallback stop,
            Pointer userdata, LongByReference driven, PointerByReference err);

    static native int payidem_client_metrics(Pointer client, int format, byte[] buf, long bufLen,
            LongByReference lenOut, PointerByReference err);

    static native int payidem_client_outbox_insert(Pointer client, byte[] orderId, byte[] method, byte[] path,
            byte[] body, long bodyLen, byte[] idempotencyKey, byte[] statusPath, int paramStyle, byte[] buf,
            long bufLen, LongByReference lenOut, PointerByReference err);

    // Outcomes and lists.
    static native short payidem_outcome_http_status(Pointer outcome);

    static native byte payidem_outcome_body(Pointer outcome, PointerByReference body, LongByReference len);

    static native byte payidem_outcome_replayed(Pointer outcome);

    static native Pointer payidem_outcome_idempotency_key(Pointer outcome);

    static native Pointer payidem_outcome_order_id(Pointer outcome);

    static native int payidem_outcome_attempts(Pointer outcome);

    static native void payidem_outcome_free(Pointer outcome);

    static native long payidem_order_list_len(Pointer list);

    static native Pointer payidem_order_list_get(Pointer list, long index);

    static native void payidem_order_list_free(Pointer list);

    // The pure operation machine and its steps.
    static native int payidem_operation_new(byte[] startJson, PointerByReference out, PointerByReference err);

    static native int payidem_operation_poll(Pointer op, Pointer signer, long nowUnix, long elapsedMs,
            PointerByReference step, PointerByReference err);

    static native int payidem_operation_persisted(Pointer op, PointerByReference err);

    static native int payidem_operation_handle(Pointer op, int outcome, short status, Pointer headers,
            long headerCount, byte[] body, long bodyLen, byte[] reason, long nowUnix, long elapsedMs,
            byte[] reactionOut, PointerByReference err);

    static native int payidem_operation_abandon(Pointer op, byte[] reason, PointerByReference end,
            PointerByReference err);

    static native int payidem_operation_attempts(Pointer op);

    static native int payidem_operation_landed(Pointer op);

    static native void payidem_operation_free(Pointer op);

    static native Pointer payidem_step_type_name(int kind);

    static native int payidem_step_kind(Pointer step);

    static native int payidem_step_persist_attempt(Pointer step);

    static native byte payidem_step_persist_first(Pointer step);

    static native int payidem_step_attempt_kind(Pointer step);

    static native int payidem_step_attempt_number(Pointer step);

    static native Pointer payidem_step_method(Pointer step);

    static native Pointer payidem_step_path(Pointer step);

    static native long payidem_step_header_count(Pointer step);

    static native byte payidem_step_header_at(Pointer step, long index, PointerByReference name,
            PointerByReference value);

    static native Pointer payidem_step_body(Pointer step, LongByReference len);

    static native long payidem_step_timeout_ms(Pointer step);

    static native long payidem_step_wait_ms(Pointer step);

    static native Pointer payidem_step_end_name(Pointer step);

    static native byte payidem_step_end_final(Pointer step);

    static native int payidem_step_end_landed(Pointer step);

    static native Pointer payidem_step_end_state(Pointer step);

    static native int payidem_step_end_result(Pointer step, PointerByReference outcome, PointerByReference err);

    static native void payidem_step_free(Pointer step);

    // The journal-bound call.
    static native int payidem_client_begin(Pointer client, byte[] orderId, byte[] method, byte[] path, byte[] body,
            long bodyLen, byte[] idempotencyKey, byte[] statusPath, long deadlineMs, PointerByReference call,
            PointerByReference err);

    static native int payidem_client_begin_resume(Pointer client, byte[] orderId, long deadlineMs,
            PointerByReference call, PointerByReference err);

    static native int payidem_call_step(Pointer call, PointerByReference step, PointerByReference err);

    static native int payidem_call_report(Pointer call, int outcome, short status, Pointer headers,
            long headerCount, byte[] body, long bodyLen, byte[] reason, PointerByReference err);

    static native int payidem_call_cancel(Pointer call, PointerByReference end, PointerByReference err);

    static native void payidem_call_free(Pointer call);

    static native int payidem_client_url(Pointer client, byte[] path, byte[] buf, long bufLen, LongByReference lenOut,
            PointerByReference err);

    static native int payidem_client_target_of(Pointer client, byte[] url, byte[] buf, long bufLen,
            LongByReference lenOut, PointerByReference err);

    static native int payidem_redact_url(byte[] location, byte[] buf, long bufLen, LongByReference lenOut,
            PointerByReference err);

    static native int payidem_refusal_body_too_large(long limitBytes, PointerByReference out, PointerByReference err);

    static native int payidem_client_execute_with_deadline(Pointer client, byte[] orderId, byte[] method,
            byte[] path, byte[] body, long bodyLen, byte[] idempotencyKey, byte[] statusPath, long deadlineMs,
            CancelCallback cancel, Pointer userdata, PointerByReference outcome, PointerByReference err);

    static native int payidem_client_resume_with_deadline(Pointer client, byte[] orderId, long deadlineMs,
            CancelCallback cancel, Pointer userdata, PointerByReference outcome, PointerByReference err);
}
