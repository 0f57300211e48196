// The save bar: a comment, and Save as the next version.
export function SaveBar({ comment, nextVersion, onComment, onSave, onClose }: { comment: string; nextVersion: number; onComment: (c: string) => void; onSave: () => void; onClose: () => void }) {
  return (
    <form
      className="savebar"
      onSubmit={(e) => {
        e.preventDefault();
        onSave();
      }}
    >
      <input autoFocus value={comment} placeholder="What changed? (comment)" onChange={(e) => onComment(e.target.value)} data-testid="save-comment" />
      <button type="submit" className="primary" data-testid="save-confirm">
        Save version {nextVersion}
      </button>
      <button type="button" onClick={onClose}>
        Cancel
      </button>
    </form>
  );
}
