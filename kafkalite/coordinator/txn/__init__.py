"""The transaction coordinator: a pure state machine, its ``__transaction_state`` records, and its trio service."""
